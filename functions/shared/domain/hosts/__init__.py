"""Bad GPU hosts: which failures belong to the host and not to the job, the evidence kept against a host,
when it is quarantined, and what a quarantine records and reports.

May import: core, fleet, diagnosis, jobs.
"""
