"""Why is a job RUNNABLE? Batch's own words first, then what its pool's fleet shows. Pure."""

from __future__ import annotations

from typing import Any

from functions.shared.domain.capacity.quotas import quota_advice, vcpu_quota_code
from functions.shared.domain.core.vocabulary import DiagnosisCategory, Remedy, counted
from functions.shared.domain.diagnosis.held import quota_held, reservation_busy
from functions.shared.domain.diagnosis.recommendations import (
    BATCH_REASONS,
    DISABLED_RECOMMENDATION,
    DISCONNECTED_RECOMMENDATION,
    GPU_LESS_RECOMMENDATION,
    INVALID_RECOMMENDATION,
    UNREGISTERED_RECOMMENDATION,
)
from functions.shared.domain.diagnosis.snapshot import Diagnosis as Diagnosis
from functions.shared.domain.diagnosis.snapshot import StuckJobSnapshot as StuckJobSnapshot
from functions.shared.domain.diagnosis.verdicts import FALLBACK_CATEGORIES, batch_verdict
from functions.shared.domain.fleet.analysis import FleetAnalysis
from functions.shared.domain.fleet.batch import BatchJobState, ComputeEnvironmentState, JobQueueState
from functions.shared.domain.fleet.consoles import printed
from functions.shared.domain.reservations.reservation import RESERVATION_TAG

Category = DiagnosisCategory

# Causes that time can cure: keep waiting, a bounded number of times.
WAIT_CATEGORIES = frozenset(
    {
        Category.WAITING_FOR_SCALE_UP,
        Category.MAX_VCPUS_REACHED,
        Category.VCPU_QUOTA_REACHED,
        Category.WAITING_FOR_RESERVATION,
        Category.UNDETERMINED,
    }
)
MAX_WAIT_CHECKS = 3
SCALE_UP_GRACE_SECONDS = 1800


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


def as_queued(job: BatchJobState, verdict: str | None, head: str | None) -> tuple[BatchJobState, str | None]:
    """The job as diagnosis reads it, and whose words it reads: Batch's verdict on the job heading its queue (`head`)
    stands for Batch's words when Batch gives none of its own (AWS says it of the head alone)."""
    if verdict is None or head is None or batch_verdict(job.status_reason) is not None:
        return job, None
    return job.model_copy(update={"status_reason": verdict}), head


def behind(diagnosis: Diagnosis, head: str | None) -> Diagnosis:
    """A diagnosis read from the verdict on the job heading the queue says whose words they are."""
    if head is None:
        return diagnosis
    said = f"{diagnosis.reason} (said of job {head}, which heads the queue this job waits in)"
    return diagnosis.model_copy(update={"reason": said, "evidence": diagnosis.evidence | {"queue_head_job": head}})


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
    for prefix, category, recommendation in BATCH_REASONS:
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
                    reason=f"{counted(len(instances), 'instance')} {what} (oldest {oldest} s): {ids}; "
                    "Batch gives no reason" + "".join(f"; {instance} printed: {line}" for instance, line in quoted[:2]),
                    evidence=evidence | ({"console": consoles} if consoles else {}),
                    recommendation=recommendation,
                )
    max_vcpus = snapshot.environment.max_vcpus
    reservation = snapshot.environment.tags.get(RESERVATION_TAG)
    if max_vcpus and fleet.alive_vcpus >= max_vcpus and reservation:
        # A reservation's pool is sized to the reservation (its maxvCpus is the reservation's instances): full is
        # what it is for, not a cap. The job waits for one of those instances while other jobs run on them.
        busy = reservation_busy(snapshot, reservation, evidence)
        if busy is not None:
            return busy
    elif max_vcpus and fleet.alive_vcpus >= max_vcpus:
        return Diagnosis(
            category=Category.MAX_VCPUS_REACHED,
            reason=f"the pool's instances use {fleet.alive_vcpus} of its {max_vcpus} maxvCpus",
            evidence=evidence | {"max_vcpus": max_vcpus, "vcpus_in_use": fleet.alive_vcpus},
            recommendation="Wait for running jobs to finish, or raise max_vcpus_per_pool.",
        )
    held = quota_held(snapshot, evidence)
    if held is not None:
        return held
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
    """(remedy, next candidate index): fall back, keep waiting (bounded; a team's GPU cap: until the team has room,
    which only its own jobs' ends bring), or give up."""
    if diagnosis.category == Category.TEAM_GPU_CAP:
        return Remedy.KEEP_WAITING, index
    if diagnosis.category in FALLBACK_CATEGORIES:
        return (Remedy.FALL_BACK, index + 1) if index + 1 < candidates else (Remedy.GIVE_UP, index)
    if diagnosis.category in WAIT_CATEGORIES and checks < MAX_WAIT_CHECKS:
        return Remedy.KEEP_WAITING, index
    return Remedy.GIVE_UP, index
