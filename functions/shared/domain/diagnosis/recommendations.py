"""What GPU Pilot recommends for the causes a pool's fleet or Batch shows (the words of diagnoses and findings), and
Batch's own reasons for a RUNNABLE job: the prefix of its statusReason, its category, what to do."""

from __future__ import annotations

from functions.shared.domain.core.vocabulary import DiagnosisCategory as Category

INVALID_RECOMMENDATION = (
    "Fix what the compute environment's statusReason names (a deleted role, instance profile or launch "
    "template, a subnet or security group that is gone); Batch will not scale it until then. GPU Pilot "
    "falls back to the next GPU type meanwhile."
)
UNREGISTERED_RECOMMENDATION = (
    "The instances run but their ECS agent never joined the cluster. Likely causes, most common first: user "
    "data that starts ecs or docker synchronously (the cloud-init deadlock: use `systemctl ... --no-block`); "
    "no route to the ECS endpoint from the subnets (NAT gateway or ecs/ecs-agent/ecs-telemetry VPC endpoints); "
    "an instance role without AmazonEC2ContainerServiceforEC2Role; an AMI without the ECS agent. Inspect an "
    "instance with Session Manager (`journalctl -u ecs`, /var/log/ecs/ecs-init.log). GPU Pilot falls back meanwhile."
)
GPU_LESS_RECOMMENDATION = (
    "The instances joined ECS without GPU resources, so GPU jobs cannot be placed: ECS_ENABLE_GPU_SUPPORT=true "
    "must be in /etc/ecs/ecs.config before the agent starts (GPU Pilot's launch template writes it), and the "
    "AMI must be an NVIDIA one (ECS_AL2023_NVIDIA). GPU Pilot falls back meanwhile."
)
DISCONNECTED_RECOMMENDATION = (
    "The instances' ECS agents lost their connection: check the route to the ECS endpoint and the agent's "
    "log on the instance (Session Manager). GPU Pilot falls back meanwhile; the sweep deregisters them."
)

DISABLED_RECOMMENDATION = (
    "The pool's job queue is DISABLED, so it takes no new jobs: GPU Pilot's sweep disables a pool whose "
    "instances keep failing to register with ECS (GET /health shows the findings), or an operator did. Fix the "
    "cause, then `aws batch update-job-queue --job-queue {queue} --state ENABLED`. GPU Pilot falls back meanwhile."
)

BATCH_REASONS: list[tuple[str, Category, str]] = [
    (
        "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
        Category.INSUFFICIENT_CAPACITY,
        "Fall back to the next GPU type; EC2 has no capacity for this one in the pool's zones.",
    ),
    (
        "MISCONFIGURATION:COMPUTE_ENVIRONMENT_MAX_RESOURCE",
        Category.MAX_VCPUS_REACHED,
        "The job asks for more vCPUs than the pool's maxvCpus: ask for fewer, or raise max_vcpus_per_pool.",
    ),
    (
        "MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT",
        Category.JOB_TOO_LARGE,
        "No instance type of this pool is large enough: GPU Pilot falls back to a larger type; or ask for fewer "
        "vCPUs, less memory or fewer GPUs.",
    ),
    (
        "MISCONFIGURATION:EC2_INSTANCE_CONFIGURATION_UNSUPPORTED",
        Category.NOT_OFFERED,
        "Fall back to another GPU type; this one is not offered in the pool's subnets.",
    ),
    (
        "MISCONFIGURATION:SERVICE_ROLE_PERMISSIONS",
        Category.SERVICE_ROLE_PERMISSIONS,
        "Give the Batch service role the permissions its statusReason names.",
    ),
    ("ACTION_REQUIRED", Category.COMPUTE_ENVIRONMENT_INVALID, INVALID_RECOMMENDATION),
]
