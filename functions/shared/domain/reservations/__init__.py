"""Reserved capacity the account holds (On-Demand Capacity Reservations, Capacity Blocks for ML) and the
rules GPU Pilot holds it to, and what the HTTP API answers about it.

May import: core.
"""
