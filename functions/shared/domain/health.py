"""The health sweep's decisions over plain data: what is stuck, what is broken, what was missed. Pure."""

from __future__ import annotations

from functions.shared.domain.batch import BatchJobState, ComputeEnvironmentState
from functions.shared.domain.diagnosis import StuckJobSnapshot, diagnose, invalid_environment
from functions.shared.domain.records import AttemptRecord
from functions.shared.domain.requests import JobRequest
from functions.shared.domain.views import Finding, HealthReport
from functions.shared.domain.vocabulary import DiagnosisCategory, FindingKind, Severity, SweepStatus

SEVERITY = {
    DiagnosisCategory.WAITING_FOR_SCALE_UP: Severity.INFO,
    DiagnosisCategory.MAX_VCPUS_REACHED: Severity.WARNING,
    DiagnosisCategory.UNDETERMINED: Severity.WARNING,
}


def missed_event(attempt: AttemptRecord, batch_job: BatchJobState) -> bool:
    """Batch says something the record does not know yet."""
    recorded = attempt.batch_status.value if attempt.batch_status else None
    return batch_job.status != recorded


def stuck_finding(
    job_id: str, request: JobRequest, batch_job: BatchJobState, environment: ComputeEnvironmentState, at: str
) -> Finding | None:
    """A finding for a job RUNNABLE past its own stuck_after_minutes, or None."""
    if batch_job.status != "RUNNABLE":
        return None
    snapshot = StuckJobSnapshot(job=batch_job, environment=environment, at=at)
    if snapshot.runnable_seconds < request.stuck_after_minutes * 60:
        return None
    diagnosis = diagnose(snapshot)
    return Finding(
        kind=diagnosis.category,
        severity=SEVERITY.get(diagnosis.category, Severity.CRITICAL),
        resource=batch_job.job_queue or "unknown",
        jobs=[job_id],
        evidence=diagnosis.evidence | {"reason": diagnosis.reason},
        recommendation=diagnosis.recommendation,
    )


def invalid_environment_finding(environment: ComputeEnvironmentState) -> Finding | None:
    if environment.status != "INVALID":
        return None
    diagnosis = invalid_environment(environment)
    return Finding(
        kind=FindingKind.COMPUTE_ENVIRONMENT_INVALID,
        severity=Severity.CRITICAL,
        resource=environment.arn or environment.name,
        evidence=diagnosis.evidence | {"state": environment.state},
        recommendation=diagnosis.recommendation,
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
