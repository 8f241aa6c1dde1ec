"""The health sweep's decisions over plain data: what is stuck, what is broken, what a missed event was,
and a sweep's report.

May import: core, fleet, diagnosis, jobs.
"""
