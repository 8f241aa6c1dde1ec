"""Capacity and selection: the GPU catalog, whether a type fits a request, the EC2 vCPU quotas, the memory
of unavailable offerings, the account's reservations as offerings, and the planning walk (planning.py): signals in,
offerings, the price band, the ranking, the rejections, the plan out and its warnings, each step entered once; and
why a job would be refused its plan (refusal.py), said once for `POST /jobs` and `POST /plan`.

May import: core, requests, fleet, reservations.
"""
