"""GPU_IDLE findings: the running jobs whose GPUs idled past their idle_policy (`warn`), read from the records the
sweep reads anyway (the index of unfinished jobs projects their attempts), so they cost the sweep no call. Pure."""

from __future__ import annotations

from functions.shared.domain.core.vocabulary import BatchStatus, FindingKind, Severity
from functions.shared.domain.diagnosis.findings import Finding
from functions.shared.domain.jobs.records import ActiveJob

GPU_IDLE_RECOMMENDATION = (
    "The job holds GPUs it barely uses (under 5% utilisation): check that its data loading keeps them busy, that it "
    "sees the GPUs it asked for, or that it is not waiting on something else; cancel it (gpupilot cancel JOB_ID) if it "
    "is stuck, ask for fewer GPUs next time, or give it an idle_policy with action cancel."
)


def gpu_idle_findings(records: list[ActiveJob], home: str) -> list[Finding]:
    """One GPU_IDLE finding per running job warned of its idle GPUs: its attempt, its idle minutes and mean
    utilisation so far (the host agent's latest report), its GPUs and what their idle time cost."""
    found = []
    for record in records:
        latest = record.latest_attempt()
        if latest is None:
            continue
        number, attempt = latest
        warned = attempt.idle_warning
        if attempt.warning is None or warned is None or attempt.batch_status != BatchStatus.RUNNING:
            continue
        utilization = attempt.gpu_utilization or {}
        idle_seconds = float(utilization.get("idle_seconds") or 0.0)
        evidence = {
            "job_id": record.job_id, "attempt": number, "instance_type": attempt.instance_type,
            "batch_job_id": attempt.batch_job_id, "idle_minutes": round(idle_seconds / 60, 1),
            "utilization_mean": utilization.get("mean"), "gpus": warned.gpus, "idle_usd": warned.idle_usd(idle_seconds),
            "after_minutes": warned.after_minutes, "warned_at": warned.at, "warning": attempt.warning,
        }  # fmt: skip
        found.append(
            Finding(
                kind=FindingKind.GPU_IDLE,
                severity=Severity.WARNING,
                resource=attempt.job_queue,
                jobs=[record.job_id],
                evidence=evidence,
                recommendation=GPU_IDLE_RECOMMENDATION,
                region=attempt.region or home,
            )
        )
    return found
