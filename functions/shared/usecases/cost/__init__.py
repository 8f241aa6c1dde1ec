"""Cost and waste: pricing each attempt once, whatever its end; `GET /costs`; the sweep's waste ledger.

May import: the domain; of the use cases: teams.
"""
