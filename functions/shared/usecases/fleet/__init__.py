"""Reading what a real account shows about a waiting job: its pool, the pool's fleet, the vCPU quota.

May import: the domain; of the use cases: no other use case.
"""
