"""DiagnoseStuckJob and DiagnoseReclaimedJob: why the attempt is not running, and what the workflow does
about it.

May import: the domain; of the use cases: teams, capacity, fleet, jobs.
"""
