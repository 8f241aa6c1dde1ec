"""The health sweep: reconciling Batch with the records (replaying missed events), stuck jobs, pools,
remediation, bad hosts, waste and the report.

May import: the domain; of the use cases: teams, cost, reservations, fleet, pools, jobs, hosts.
"""
