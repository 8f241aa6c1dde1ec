"""Teams: who is calling and what it may do, each team's budget (a job's commitment at submit, raised for a dearer
attempt, settled when it ended), `GET /teams`, the audit log, and a job waiting for its team's GPU cap.

May import: the domain; of the use cases: no other use case.
"""
