"""Why is a job RUNNABLE? Batch's own words first, then what Batch does not say. Pure."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from functions.shared.models import Diagnosis, DiagnosisCategory

Category = DiagnosisCategory

# Causes that another GPU type can cure: fall back.
FALLBACK_CATEGORIES = frozenset(
    {
        Category.INSUFFICIENT_CAPACITY,
        Category.NOT_OFFERED,
        Category.ECS_AGENT_NOT_REGISTERED,
        Category.GPU_NOT_REGISTERED,
        Category.NO_INSTANCES_LAUNCHED,
    }
)
# Causes that time can cure: keep waiting, a bounded number of times.
WAIT_CATEGORIES = frozenset({Category.WAITING_FOR_SCALE_UP, Category.MAX_VCPUS_REACHED, Category.UNDETERMINED})
MAX_WAIT_CHECKS = 3

_BATCH_REASONS: list[tuple[str, Category, str]] = [
    (
        "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
        Category.INSUFFICIENT_CAPACITY,
        "Fall back to the next GPU type; EC2 has no capacity for this one in the pool's zones.",
    ),
    (
        "MISCONFIGURATION:COMPUTE_ENVIRONMENT_MAX_RESOURCE",
        Category.MAX_VCPUS_REACHED,
        "Wait for running jobs to finish, or raise maxvCpus of the pool.",
    ),
    (
        "MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT",
        Category.JOB_TOO_LARGE,
        "Ask for fewer vCPUs, less memory or fewer GPUs, or allow larger instance types.",
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
    (
        "ACTION_REQUIRED",
        Category.COMPUTE_ENVIRONMENT_INVALID,
        "Fix the compute environment named in the evidence; Batch will not scale it until then.",
    ),
]


class StuckJobSnapshot(BaseModel):
    """What diagnosis looks at, as plain data read from Batch."""

    batch_job_id: str
    status: str
    status_reason: str | None = None
    runnable_seconds: float = 0
    compute_environment: str
    compute_environment_status: str | None = None
    compute_environment_reason: str | None = None

    @classmethod
    def from_batch(
        cls, job: dict[str, Any], environment: dict[str, Any], compute_environment: str, now_ms: float
    ) -> StuckJobSnapshot:
        """The snapshot of a `DescribeJobs` entry and its pool's `DescribeComputeEnvironments` entry."""
        created = job.get("createdAt")
        return cls(
            batch_job_id=job.get("jobId", "unknown"),
            status=job.get("status", "UNKNOWN"),
            status_reason=job.get("statusReason"),
            runnable_seconds=(now_ms - created) / 1000 if created else 0,
            compute_environment=compute_environment,
            compute_environment_status=environment.get("status"),
            compute_environment_reason=environment.get("statusReason"),
        )


def diagnose(snapshot: StuckJobSnapshot) -> Diagnosis:
    """One diagnosis with its evidence and recommendation."""
    evidence: dict[str, Any] = {
        "batch_job_id": snapshot.batch_job_id,
        "status": snapshot.status,
        "status_reason": snapshot.status_reason,
        "runnable_seconds": round(snapshot.runnable_seconds),
        "compute_environment": snapshot.compute_environment,
        "compute_environment_status": snapshot.compute_environment_status,
    }
    if snapshot.compute_environment_status == "INVALID":
        return Diagnosis(
            category=Category.COMPUTE_ENVIRONMENT_INVALID,
            reason=f"compute environment {snapshot.compute_environment} is INVALID: "
            f"{snapshot.compute_environment_reason or 'no statusReason given'}",
            evidence=evidence | {"compute_environment_reason": snapshot.compute_environment_reason},
            recommendation="Fix what the compute environment's statusReason names; Batch will not scale it.",
        )
    reason = snapshot.status_reason or ""
    for prefix, category, recommendation in _BATCH_REASONS:
        if reason.startswith(prefix):
            return Diagnosis(
                category=category, reason=f"AWS Batch says: {reason}", evidence=evidence, recommendation=recommendation
            )
    return Diagnosis(
        category=Category.WAITING_FOR_SCALE_UP if snapshot.runnable_seconds < 1800 else Category.UNDETERMINED,
        reason=f"RUNNABLE for {round(snapshot.runnable_seconds)} s and Batch gives no reason",
        evidence=evidence,
        recommendation="Normal while the pool scales up from zero; GPU instances take minutes to boot.",
    )


def remedy(diagnosis: Diagnosis, index: int, candidates: int, checks: int) -> tuple[str, int]:
    """(action, next candidate index): fall back, keep waiting (bounded), or give up."""
    if diagnosis.category in FALLBACK_CATEGORIES:
        return ("fall_back", index + 1) if index + 1 < candidates else ("give_up", index)
    if diagnosis.category in WAIT_CATEGORIES and checks < MAX_WAIT_CHECKS:
        return "keep_waiting", index
    return "give_up", index
