"""What a user asks for: the job request (the body of `POST /jobs` and `POST /plan`, validated once at the
edge), what it asks of the host agent (checkpoints, an idle policy), and the grammar of what it refers to (images,
environment names, secret and role ARNs, regions).

May import: core.
"""
