"""EnsureJobQueue: creating or reusing the pool for a candidate, the words of its provisioning, and retiring
pools (making room under Batch's limits).

May import: the domain; of the use cases: capacity, reservations.
"""
