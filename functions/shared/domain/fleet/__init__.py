"""AWS Batch, ECS and EC2 as plain data, and what a pool's fleet says: a job's and a compute environment's
state, the instances and container instances, which of them never registered, lost their agent or their GPUs,
the user data every GPU Pilot host boots with and what its console says.

May import: core.
"""
