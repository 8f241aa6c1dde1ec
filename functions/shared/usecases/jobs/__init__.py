"""Jobs: `POST /jobs`, SubmitBatchJob, waiting without polling (task tokens and Batch's events),
RecordCost and RecordFailure, `GET`/`DELETE /jobs`, and a job's logs.

May import: the domain; of the use cases: teams, cost, capacity, reservations, fleet.
"""
