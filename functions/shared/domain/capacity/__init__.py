"""Capacity and selection: the GPU catalog, whether a type fits a request, the EC2 vCPU quotas, the memory
of unavailable offerings, and planning: signals in, candidates in attempt order and rejections out.

May import: core, requests, fleet, reservations.
"""
