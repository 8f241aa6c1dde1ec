"""Use cases: one module per thing the control plane does, over the ports (no boto3 here), one package per
capability. A use case imports the domain, the ports and the use cases its package's docstring names; imports run
one way, in this order: teams < cost < capacity < reservations < fleet < pools < jobs < diagnosis < hosts <
health.
"""
