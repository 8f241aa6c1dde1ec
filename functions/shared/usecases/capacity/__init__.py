"""Capacity and selection: `POST /plan`, the check of `POST /jobs` and SelectGpuType; leaving an offering
behind (the memory of unavailable offerings).

May import: the domain; of the use cases: no other use case.
"""
