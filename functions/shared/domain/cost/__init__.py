"""Cost and waste: what an attempt cost (its share of the instance), the share of an instance no job held,
what the fleet cost without serving a job, and the cost report `GET /costs` answers.

May import: core, fleet, reservations.
"""
