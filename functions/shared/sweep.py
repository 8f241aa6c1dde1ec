"""Health sweep: the safety net that makes a missed Batch event harmless, and the fleet's health report."""

from __future__ import annotations

from typing import Any

from functions.shared.diagnosis import StuckJobSnapshot, diagnose
from functions.shared.lifecycle import now_iso
from functions.shared.models import DiagnosisCategory, Finding, HealthReport, JobRequest

ACTIVE_STATUSES = ("RUNNABLE", "STARTING", "RUNNING")
SEVERITY = {
    DiagnosisCategory.WAITING_FOR_SCALE_UP: "info",
    DiagnosisCategory.MAX_VCPUS_REACHED: "warning",
    DiagnosisCategory.UNDETERMINED: "warning",
}


def latest_attempt(record: dict[str, Any]) -> tuple[int, dict[str, Any]] | None:
    attempts = record.get("attempts") or {}
    if not attempts:
        return None
    number = max(attempts, key=int)
    return int(number), attempts[number]


def missed_event(record_attempt: dict[str, Any], batch_job: dict[str, Any]) -> bool:
    """Batch says something the record does not know yet."""
    return batch_job.get("status") != record_attempt.get("batch_status")


def stuck_finding(
    job_id: str, request: JobRequest, batch_job: dict[str, Any], environment: dict[str, Any], now_ms: float
) -> Finding | None:
    """A finding for a job RUNNABLE past its own stuck_after_minutes, or None."""
    if batch_job.get("status") != "RUNNABLE":
        return None
    snapshot = StuckJobSnapshot.from_batch(
        batch_job, environment, environment.get("computeEnvironmentName", "unknown"), now_ms
    )
    if snapshot.runnable_seconds < request.stuck_after_minutes * 60:
        return None
    diagnosis = diagnose(snapshot)
    return Finding(
        kind=diagnosis.category,
        severity=SEVERITY.get(diagnosis.category, "critical"),  # type: ignore[arg-type]
        resource=batch_job.get("jobQueue", "unknown"),
        jobs=[job_id],
        evidence=diagnosis.evidence | {"reason": diagnosis.reason},
        recommendation=diagnosis.recommendation,
    )


def invalid_environment_finding(environment: dict[str, Any]) -> Finding | None:
    if environment.get("status") != "INVALID":
        return None
    return Finding(
        kind=DiagnosisCategory.COMPUTE_ENVIRONMENT_INVALID,
        severity="critical",
        resource=environment["computeEnvironmentArn"],
        evidence={"status_reason": environment.get("statusReason"), "state": environment.get("state")},
        recommendation="Fix what the statusReason names; jobs in its queue will not start until then.",
    )


def summarize(findings: list[Finding], reconciled: int) -> dict[str, int]:
    summary = {"findings": len(findings), "reconciled_events": reconciled}
    for finding in findings:
        summary[finding.kind.value] = summary.get(finding.kind.value, 0) + 1
    return summary


def report(findings: list[Finding], reconciled: int) -> HealthReport:
    return HealthReport(swept_at=now_iso(), findings=findings, summary=summarize(findings, reconciled))
