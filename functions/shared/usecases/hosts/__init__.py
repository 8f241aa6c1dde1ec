"""Bad GPU hosts: the evidence Batch's events bring, the sweep's quarantines, and a pool with too many
unhealthy hosts at once.

May import: the domain; of the use cases: no other use case.
"""
