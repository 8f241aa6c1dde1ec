"""Capacity and selection: `POST /plan`, the check of `POST /jobs` and SelectGpuType; the capacity regions a request
may not use that could serve it (elsewhere.py); leaving an offering behind (the memory of unavailable offerings).

May import: the domain; of the use cases: no other use case.
"""
