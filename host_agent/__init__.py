"""The GPU Pilot host agent: a small program that runs on every GPU Pilot host (installed by the launch template's
user data), beside the ECS agent, with the instance role's permissions.

For each GPU Pilot job on its host it restores the job's checkpoint directory before the program runs, signals the
program and uploads the directory when EC2 gives the two-minute spot interruption notice (and every
`checkpoint.every_minutes` if asked), samples each GPU's utilisation and memory every 10 seconds, and reports what it
saw of each attempt to the control plane (EventBridge) and to CloudWatch.

It is written for the host it runs on, an ECS-optimised Amazon Linux 2023 NVIDIA AMI: Python 3.9 (the system
interpreter, which dnf and cloud-init run on) and its standard library only, the `docker` and `nvidia-smi` commands the
AMI ships, the instance metadata service and the ECS agent's introspection API. Nothing is installed from a package
repository. The agent is a zip application of these modules (package.py), published by the control plane in the
deployment's hosts bucket under its SHA-256; the launch template's user data pins that SHA-256 and carries the small
bootstrap that fetches it (bootstrap.py) when the agent's service starts, after cloud-init. So a host runs the agent of
its launch template's version, and a new agent is a new launch template version, which is a new pool.

Nothing here assumes anything of a job's image beyond a POSIX shell: what it does for a job happens on the host, or
through the job's command wrapper (functions/shared/domain/jobs/host_agent.py).

core.py decides (over the ports in ports.py), what is due and when; tracked.py holds what it knows of each job and
that job's checkpoint directory, made ready, watched and uploaded; host.py and aws.py are the host's adapters
(boto_aws.py: the same calls over boto3, off a host); checkpoints.py moves a checkpoint directory to and from S3;
utilization.py sums the samples; report.py says what the control plane hears.
"""

VERSION = "1"
