"""Why is a job RUNNABLE? Batch's own words first, then what its pool's fleet shows. Pure."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from functions.shared.domain.batch import BatchJobState, ComputeEnvironmentState, FleetState, JobQueueState
from functions.shared.domain.clock import seconds_between
from functions.shared.domain.consoles import printed
from functions.shared.domain.fleet import (
    LAUNCH_GRACE_SECONDS,
    REGISTRATION_GRACE_SECONDS,
    FleetAnalysis,
    QuotaState,
    analyse_fleet,
    quota_advice,
    vcpu_quota_code,
)
from functions.shared.domain.model import DomainModel
from functions.shared.domain.vocabulary import DiagnosisCategory, Remedy

Category = DiagnosisCategory


class Diagnosis(DomainModel):
    category: DiagnosisCategory
    reason: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    recommendation: str


# Causes that another GPU type can cure: fall back.
FALLBACK_CATEGORIES = frozenset(
    {
        Category.INSUFFICIENT_CAPACITY,
        Category.NOT_OFFERED,
        Category.ECS_AGENT_NOT_REGISTERED,
        Category.GPU_NOT_REGISTERED,
        Category.AGENT_DISCONNECTED,
        Category.NO_INSTANCES_LAUNCHED,
        Category.COMPUTE_ENVIRONMENT_INVALID,
        Category.JOB_TOO_LARGE,
        Category.POOL_DISABLED,
        Category.POOL_LIMIT,
    }
)
# Causes that time can cure: keep waiting, a bounded number of times.
WAIT_CATEGORIES = frozenset({Category.WAITING_FOR_SCALE_UP, Category.MAX_VCPUS_REACHED, Category.UNDETERMINED})
MAX_WAIT_CHECKS = 3
SCALE_UP_GRACE_SECONDS = 1800
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

_BATCH_REASONS: list[tuple[str, Category, str]] = [
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


class StuckJobSnapshot(DomainModel):
    """What diagnosis looks at, as plain data read from AWS: the job, its pool, the pool's fleet, the quota."""

    job: BatchJobState
    environment: ComputeEnvironmentState
    at: str = Field(description="When the snapshot was read (ISO)")
    fleet: FleetState | None = None
    instance_vcpus: dict[str, int] = Field(default_factory=dict, description="vCPUs of each GPU type")
    quota: QuotaState | None = None
    quota_unavailable: str | None = Field(default=None, description="Why the quota could not be read (call: error)")
    registration_grace_seconds: float = REGISTRATION_GRACE_SECONDS
    launch_grace_seconds: float = LAUNCH_GRACE_SECONDS
    fleet_analysis: FleetAnalysis | None = Field(default=None, description="The fleet, analysed already")
    consoles: dict[str, str] = Field(
        default_factory=dict, description="Console output of instances that never registered or have no GPUs"
    )

    @property
    def runnable_seconds(self) -> float:
        return seconds_between(self.job.created_at, self.at) if self.job.created_at else 0.0

    def analysis(self) -> FleetAnalysis:
        if self.fleet_analysis is not None:
            return self.fleet_analysis
        return analyse_fleet(self.fleet or FleetState(), self.at, self.instance_vcpus, self.registration_grace_seconds)


def invalid_environment(environment: ComputeEnvironmentState, evidence: dict[str, Any] | None = None) -> Diagnosis:
    """The diagnosis of a pool whose compute environment Batch marked INVALID."""
    return Diagnosis(
        category=Category.COMPUTE_ENVIRONMENT_INVALID,
        reason=f"compute environment {environment.name} is INVALID: "
        f"{environment.status_reason or 'no statusReason given'}",
        evidence=(evidence or {})
        | {
            "compute_environment": environment.name,
            "compute_environment_status": environment.status,
            "compute_environment_reason": environment.status_reason,
        },
        recommendation=INVALID_RECOMMENDATION,
    )


def disabled_queue(queue: JobQueueState) -> Diagnosis:
    """The diagnosis of a pool whose job queue is DISABLED: nothing can be submitted to it."""
    return Diagnosis(
        category=Category.POOL_DISABLED,
        reason=f"job queue {queue.name} is DISABLED: it takes no new jobs",
        evidence={"job_queue": queue.name, "job_queue_state": queue.state, "job_queue_status": queue.status},
        recommendation=DISABLED_RECOMMENDATION.format(queue=queue.name),
    )


def diagnose(snapshot: StuckJobSnapshot) -> Diagnosis:
    """One diagnosis with its evidence and recommendation; Batch's statusReason stays verbatim in the evidence."""
    job, environment = snapshot.job, snapshot.environment
    evidence: dict[str, Any] = {
        "batch_job_id": job.job_id,
        "status": job.status,
        "status_reason": job.status_reason,
        "runnable_seconds": round(snapshot.runnable_seconds),
        "compute_environment": environment.name,
        "compute_environment_status": environment.status,
    }
    if environment.status == "INVALID":
        return invalid_environment(environment, evidence)
    reason = job.status_reason or ""
    for prefix, category, recommendation in _BATCH_REASONS:
        if reason.startswith(prefix):
            return Diagnosis(
                category=category, reason=f"AWS Batch says: {reason}", evidence=evidence, recommendation=recommendation
            )
    if snapshot.fleet is None:
        return _waiting(snapshot, evidence)
    return _from_fleet(snapshot, snapshot.analysis(), evidence)


def _from_fleet(snapshot: StuckJobSnapshot, fleet: FleetAnalysis, evidence: dict[str, Any]) -> Diagnosis:
    """What Batch does not say: the pool's instances and their ECS registration."""
    evidence = evidence | fleet.evidence()
    if fleet.usable == 0:
        problems = [
            (fleet.unregistered, Category.ECS_AGENT_NOT_REGISTERED, "running but never registered with ECS",
             UNREGISTERED_RECOMMENDATION),
            (fleet.gpu_less, Category.GPU_NOT_REGISTERED, "registered with ECS without their GPUs",
             GPU_LESS_RECOMMENDATION),
            (fleet.disconnected, Category.AGENT_DISCONNECTED, "registered, but their ECS agent disconnected",
             DISCONNECTED_RECOMMENDATION),
        ]  # fmt: skip
        for instances, category, what, recommendation in problems:
            if instances:
                oldest = max(i.age_seconds for i in instances)
                ids = ", ".join(i.instance_id for i in instances[:5])
                consoles, quoted = printed(snapshot.consoles, [i.instance_id for i in instances])
                return Diagnosis(
                    category=category,
                    reason=f"{len(instances)} instance(s) {what} (oldest {oldest} s): {ids}; Batch gives no reason"
                    + "".join(f"; {instance} printed: {line}" for instance, line in quoted[:2]),
                    evidence=evidence | ({"console": consoles} if consoles else {}),
                    recommendation=recommendation,
                )
    max_vcpus = snapshot.environment.max_vcpus
    if max_vcpus and fleet.alive_vcpus >= max_vcpus:
        return Diagnosis(
            category=Category.MAX_VCPUS_REACHED,
            reason=f"the pool's instances use {fleet.alive_vcpus} of its {max_vcpus} maxvCpus",
            evidence=evidence | {"max_vcpus": max_vcpus, "vcpus_in_use": fleet.alive_vcpus},
            recommendation="Wait for running jobs to finish, or raise max_vcpus_per_pool.",
        )
    if fleet.alive == 0 and snapshot.runnable_seconds >= snapshot.launch_grace_seconds:
        return _no_instances(snapshot, evidence)
    return _waiting(snapshot, evidence)


def _no_instances(snapshot: StuckJobSnapshot, evidence: dict[str, Any]) -> Diagnosis:
    environment = snapshot.environment
    smallest = min(snapshot.instance_vcpus.get(t, 0) for t in environment.instance_types or [""]) or 1
    code = vcpu_quota_code(environment.instance_types[0], environment.spot) if environment.instance_types else None
    cause, recommendation, quota_evidence = quota_advice(code, snapshot.quota, smallest, snapshot.quota_unavailable)
    return Diagnosis(
        category=Category.NO_INSTANCES_LAUNCHED,
        reason=f"RUNNABLE for {round(snapshot.runnable_seconds)} s, the pool is VALID and Batch launched no "
        f"instance for it{cause}",
        evidence=evidence | quota_evidence,
        recommendation=recommendation,
    )


def _waiting(snapshot: StuckJobSnapshot, evidence: dict[str, Any]) -> Diagnosis:
    waited = snapshot.runnable_seconds
    return Diagnosis(
        category=Category.WAITING_FOR_SCALE_UP if waited < SCALE_UP_GRACE_SECONDS else Category.UNDETERMINED,
        reason=f"RUNNABLE for {round(waited)} s and Batch gives no reason",
        evidence=evidence,
        recommendation="Normal while the pool scales up from zero; GPU instances take minutes to boot.",
    )


def remedy(diagnosis: Diagnosis, index: int, candidates: int, checks: int) -> tuple[Remedy, int]:
    """(remedy, next candidate index): fall back, keep waiting (bounded), or give up."""
    if diagnosis.category in FALLBACK_CATEGORIES:
        return (Remedy.FALL_BACK, index + 1) if index + 1 < candidates else (Remedy.GIVE_UP, index)
    if diagnosis.category in WAIT_CATEGORIES and checks < MAX_WAIT_CHECKS:
        return Remedy.KEEP_WAITING, index
    return Remedy.GIVE_UP, index
