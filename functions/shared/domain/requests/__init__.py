"""What a user asks for: the job request (the body of `POST /jobs` and `POST /plan`, validated once at the
edge) and the grammar of what it refers to (images, environment names, secret and role ARNs, regions).

May import: core.
"""
