"""Pools: a pooled GPU compute environment and its job queue as specs, what the sweep remembers of each
pool, and retiring pools in Batch's order.

May import: core, fleet, reservations, capacity, diagnosis.
"""
