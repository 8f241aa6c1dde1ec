"""The health sweep's decisions over plain data: what is stuck, what is broken, what was missed. Pure."""

from __future__ import annotations

import uuid

from functions.shared.domain.core.vocabulary import DiagnosisCategory, FindingKind, Severity, SweepStatus
from functions.shared.domain.diagnosis.findings import MAX_LISTED, Finding, HealthReport
from functions.shared.domain.diagnosis.recommendations import (
    DISCONNECTED_RECOMMENDATION,
    GPU_LESS_RECOMMENDATION,
    UNREGISTERED_RECOMMENDATION,
)
from functions.shared.domain.diagnosis.runnable import Diagnosis, invalid_environment
from functions.shared.domain.fleet.analysis import FleetAnalysis
from functions.shared.domain.fleet.batch import BatchJobState, ComputeEnvironmentState
from functions.shared.domain.jobs.records import AttemptRecord

FLEET_PROBLEMS = (
    ("unregistered", FindingKind.ECS_AGENT_NOT_REGISTERED, UNREGISTERED_RECOMMENDATION),
    ("gpu_less", FindingKind.GPU_NOT_REGISTERED, GPU_LESS_RECOMMENDATION),
    ("disconnected", FindingKind.AGENT_DISCONNECTED, DISCONNECTED_RECOMMENDATION),
)
SEVERITY = {
    DiagnosisCategory.WAITING_FOR_SCALE_UP: Severity.INFO,
    DiagnosisCategory.MAX_VCPUS_REACHED: Severity.WARNING,
    DiagnosisCategory.VCPU_QUOTA_REACHED: Severity.WARNING,
    DiagnosisCategory.WAITING_FOR_RESERVATION: Severity.INFO,
    DiagnosisCategory.UNDETERMINED: Severity.WARNING,
}


def new_sweep_id() -> str:
    return f"sweep-{uuid.uuid4().hex[:16]}"


def missed_event(attempt: AttemptRecord, batch_job: BatchJobState) -> bool:
    """Batch says something the record does not know yet: a status, or its reason for a job still waiting (a lost
    queue-blocked event, which may be a verdict the workflow acts on at once)."""
    recorded = attempt.batch_status.value if attempt.batch_status else None
    if batch_job.status != recorded:
        return True
    waiting = batch_job.status in ("SUBMITTED", "PENDING", "RUNNABLE")
    return waiting and bool(batch_job.status_reason) and batch_job.status_reason != attempt.status_reason


class StuckTally:
    """The stuck jobs one diagnosis stands for (the first MAX_LISTED named, all counted), as one finding."""

    def __init__(self, diagnosis: Diagnosis, pool: str) -> None:
        self.diagnosis, self.pool = diagnosis, pool
        self.jobs: list[str] = []
        self.count = self.foreign = 0
        self.past_limit: list[BatchJobState] = []

    def add(self, job_id: str, foreign: bool) -> None:
        self.count += 1
        self.foreign += foreign
        if len(self.jobs) < MAX_LISTED:
            self.jobs.append(job_id)

    def finding(self) -> Finding:
        diagnosis = self.diagnosis
        return Finding(
            kind=diagnosis.category,
            severity=SEVERITY.get(diagnosis.category, Severity.CRITICAL),
            resource=self.pool,
            jobs=self.jobs,
            evidence=diagnosis.evidence
            | {"reason": diagnosis.reason, "jobs_stuck": self.count, "foreign_jobs": self.foreign},
            recommendation=diagnosis.recommendation,
        )


def grouped(findings: list[Finding]) -> list[Finding]:
    """One finding per (pool, kind): its jobs listed (the first MAX_LISTED), the first one's evidence kept (an
    INVALID pool's own finding first, so the jobs stuck in it join that one)."""
    groups: dict[tuple[str, FindingKind], Finding] = {}
    counts: dict[tuple[str, FindingKind], int] = {}
    for finding in findings:
        key = (finding.resource, finding.kind)
        counts[key] = counts.get(key, 0) + int(finding.evidence.get("jobs_stuck", len(finding.jobs)))
        if key not in groups:
            groups[key] = finding.model_copy(deep=True)
        else:
            merged = groups[key]
            merged.jobs += finding.jobs[: MAX_LISTED - len(merged.jobs)]
            merged.evidence["foreign_jobs"] = merged.evidence.get("foreign_jobs", 0) + finding.evidence.get(
                "foreign_jobs", 0
            )
    for key, finding in groups.items():
        if counts[key]:
            finding.evidence["jobs_stuck"] = counts[key]
    return list(groups.values())


def fleet_findings(pool: ComputeEnvironmentState, analysis: FleetAnalysis) -> list[Finding]:
    """The pool's instances that cannot run jobs: never registered, registered without GPUs, disconnected."""
    found = []
    for attribute, kind, recommendation in FLEET_PROBLEMS:
        instances = getattr(analysis, attribute)
        if instances:
            found.append(
                Finding(
                    kind=kind,
                    severity=Severity.CRITICAL,
                    resource=pool.name,
                    instances=[i.instance_id for i in instances],
                    evidence={
                        "instances": [i.model_dump(exclude_none=True) for i in instances[:MAX_LISTED]],
                        "count": len(instances),
                        "oldest_seconds": max(i.age_seconds for i in instances),
                    },
                    recommendation=recommendation,
                )
            )
    return found


def invalid_environment_finding(environment: ComputeEnvironmentState) -> Finding | None:
    if environment.status != "INVALID":
        return None
    diagnosis = invalid_environment(environment)
    return Finding(
        kind=FindingKind.COMPUTE_ENVIRONMENT_INVALID,
        severity=Severity.CRITICAL,
        resource=environment.name,
        evidence=diagnosis.evidence | {"compute_environment_arn": environment.arn, "state": environment.state},
        recommendation=diagnosis.recommendation,
    )


REGION_UNREACHABLE_RECOMMENDATION = (
    "The sweep could not read this capacity region: until it can, the records of jobs there are not reconciled with "
    "Batch, and its pools and hosts are not checked (the other regions were swept). Check that the region's stack "
    "is deployed (cdk deploy --all), that the region is enabled for the account, and that the sweep function's role "
    "holds its grants there; the evidence holds AWS's words."
)


def region_unreachable_finding(region: str, failure: str) -> Finding:
    """REGION_UNREACHABLE: a capacity region the sweep could not read, with AWS's words for why."""
    return Finding(
        kind=FindingKind.REGION_UNREACHABLE,
        severity=Severity.CRITICAL,
        resource=region,
        evidence={"error": failure},
        recommendation=REGION_UNREACHABLE_RECOMMENDATION,
        region=region,
    )


def summarize(findings: list[Finding], reconciled: int) -> dict[str, int]:
    summary = {"findings": len(findings), "reconciled_events": reconciled}
    for finding in findings:
        summary[finding.kind.value] = summary.get(finding.kind.value, 0) + 1
    return summary


def report(sweep_id: str, swept_at: str, findings: list[Finding], reconciled: int) -> HealthReport:
    return HealthReport(
        sweep_id=sweep_id,
        status=SweepStatus.COMPLETE,
        swept_at=swept_at,
        findings=findings,
        summary=summarize(findings, reconciled),
    )
