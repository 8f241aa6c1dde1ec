"""Why a job waits: Batch's own words first, then what its pool's fleet and the vCPU quota show; what GPU
Pilot recommends for each cause; a spot reclaim; and the findings a health sweep reports in the same vocabulary.

May import: core, fleet, reservations, capacity.
"""
