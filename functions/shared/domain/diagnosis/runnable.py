"""Why is a job RUNNABLE? Batch's own words first, then what its pool's fleet shows. Pure."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from functions.shared.domain.capacity.quotas import QuotaState, quota_advice, vcpu_quota_code
from functions.shared.domain.core.clock import seconds_between
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.vocabulary import DiagnosisCategory, Remedy, counted
from functions.shared.domain.diagnosis.recommendations import (
    BATCH_REASONS,
    DISABLED_RECOMMENDATION,
    DISCONNECTED_RECOMMENDATION,
    GPU_LESS_RECOMMENDATION,
    INVALID_RECOMMENDATION,
    UNREGISTERED_RECOMMENDATION,
)
from functions.shared.domain.diagnosis.verdicts import FALLBACK_CATEGORIES, batch_verdict
from functions.shared.domain.fleet.analysis import (
    LAUNCH_GRACE_SECONDS,
    REGISTRATION_GRACE_SECONDS,
    FleetAnalysis,
    analyse_fleet,
)
from functions.shared.domain.fleet.batch import BatchJobState, ComputeEnvironmentState, FleetState, JobQueueState
from functions.shared.domain.fleet.consoles import printed

Category = DiagnosisCategory


class Diagnosis(DomainModel):
    category: DiagnosisCategory
    reason: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    recommendation: str


# Causes that time can cure: keep waiting, a bounded number of times.
WAIT_CATEGORIES = frozenset(
    {Category.WAITING_FOR_SCALE_UP, Category.MAX_VCPUS_REACHED, Category.VCPU_QUOTA_REACHED, Category.UNDETERMINED}
)
MAX_WAIT_CHECKS = 3
SCALE_UP_GRACE_SECONDS = 1800


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
    if max_vcpus and fleet.alive_vcpus >= max_vcpus:
        return Diagnosis(
            category=Category.MAX_VCPUS_REACHED,
            reason=f"the pool's instances use {fleet.alive_vcpus} of its {max_vcpus} maxvCpus",
            evidence=evidence | {"max_vcpus": max_vcpus, "vcpus_in_use": fleet.alive_vcpus},
            recommendation="Wait for running jobs to finish, or raise max_vcpus_per_pool.",
        )
    held = _quota_held(snapshot, evidence)
    if held is not None:
        return held
    if fleet.alive == 0 and snapshot.runnable_seconds >= snapshot.launch_grace_seconds:
        return _no_instances(snapshot, evidence)
    return _waiting(snapshot, evidence)


def _quota_held(snapshot: StuckJobSnapshot, evidence: dict[str, Any]) -> Diagnosis | None:
    """The job is queued behind running instances that hold the account's vCPU quota for its instance family: Batch
    cannot launch one more until some end (a quota too small for even one instance is another cause)."""
    quota, environment = snapshot.quota, snapshot.environment
    if quota is None or quota.used_vcpus is None or not environment.instance_types:
        return None
    smallest = min(snapshot.instance_vcpus.get(t, 0) for t in environment.instance_types) or 1
    if quota.vcpus < smallest or quota.free_vcpus >= smallest:
        return None
    holders = "; ".join(holder.words() for holder in quota.holders[:5]) or "instances GPU Pilot cannot see"
    smallest_type = min(environment.instance_types, key=lambda t: snapshot.instance_vcpus.get(t, 0))
    return Diagnosis(
        category=Category.VCPU_QUOTA_REACHED,
        reason=f"the account's vCPU quota {quota.code} ({quota.name}) is {quota.vcpus:g} and running instances hold "
        f"{quota.used_vcpus:g} of it: {holders}; Batch cannot launch another {smallest_type} ({smallest} vCPUs) "
        "until some of them end",
        evidence=evidence
        | {
            "quota_code": quota.code,
            "quota_name": quota.name,
            "quota_vcpus": quota.vcpus,
            "quota_used_vcpus": quota.used_vcpus,
            "quota_holders": [holder.model_dump() for holder in quota.holders],
        },
        recommendation="Normal while they run: the job starts when one of them ends. To run more at once, ask for "
        f"more: `aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {quota.code} "
        f"--desired-value {quota.used_vcpus + smallest:g}`.",
    )


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
