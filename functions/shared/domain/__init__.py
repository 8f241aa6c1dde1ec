"""Pure domain: the decisions GPU Pilot makes over plain data, one package per capability. No I/O here.

Each package's docstring says what it owns and which packages it may import; imports run one way, in this order
(a package imports only packages before it):
core < requests < fleet < reservations < capacity < cost < diagnosis < teams < pools < jobs < hosts < health.
"""
