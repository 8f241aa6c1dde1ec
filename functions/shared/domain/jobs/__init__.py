"""Jobs: the job record (attempts, waits, timeline), status rules, the GpuJob workflow's inputs and outputs,
GPU job definitions (with what they tell the host agent), what the API answers about a job, what the workflow does
next, and what a job printed.

May import: core, requests, fleet, reservations, capacity, cost, diagnosis, teams, pools.
"""
