"""The health sweep: the safety net that makes a missed Batch event harmless, and the fleet's health report.

It runs in the health_sweep function only (on its schedule, or started by POST /sweep), never inside
an API request: API Gateway gives a request 29 seconds.
"""

from __future__ import annotations

import uuid

from functions.shared.domain.batch import BatchJobEvent, BatchJobState, ComputeEnvironmentState
from functions.shared.domain.clock import now_iso
from functions.shared.domain.health import (
    invalid_environment_finding,
    missed_event,
    report,
    stuck_finding,
)
from functions.shared.domain.records import AttemptRecord, JobRecord
from functions.shared.domain.views import Finding, HealthReport, SweepStarted
from functions.shared.domain.vocabulary import FindingKind, MetricName, Severity
from functions.shared.observability import logger
from functions.shared.ports import Ports
from functions.shared.usecases.track import record_batch_event, resume


def new_sweep_id() -> str:
    return f"sweep-{uuid.uuid4().hex[:16]}"


def start_sweep(ports: Ports) -> SweepStarted:
    """POST /sweep: record a RUNNING sweep and start it in the sweep function."""
    sweep_id = new_sweep_id()
    ports.health.start_sweep(sweep_id)
    ports.sweeps.start_sweep(sweep_id)
    return SweepStarted(sweep_id=sweep_id)


def health(sweep_id: str | None, ports: Ports) -> HealthReport:
    """GET /health: that sweep (SweepNotFound when unknown), or the latest finished one."""
    if sweep_id is not None:
        return ports.health.get_report(sweep_id)
    latest = ports.health.latest_report()
    return latest or HealthReport(swept_at=None, findings=[], summary={"findings": 0})


def run_sweep(sweep_id: str | None, ports: Ports) -> HealthReport:
    """Replay missed Batch events, find stuck jobs and INVALID pools, record and emit them."""
    sweep_id = sweep_id or new_sweep_id()
    environments = {e.name: e for e in ports.pools.compute_environments(ports.settings.resource_prefix)}
    latest: dict[str, tuple[JobRecord, AttemptRecord]] = {}
    for record in ports.jobs.active_jobs():
        found = record.latest_attempt()
        if found is not None and found[1].batch_job_id:
            latest[found[1].batch_job_id] = (record, found[1])
    findings: list[Finding] = [f for f in map(invalid_environment_finding, environments.values()) if f]
    reconciled = 0
    at = now_iso()
    for batch_job in ports.batch.describe_jobs(list(latest)):
        record, attempt = latest[batch_job.job_id]
        try:
            reconciled += _reconcile(record, attempt, batch_job, at, ports)
        except Exception:
            # One job's trouble must not stop the sweep of the others.
            logger.exception("could not reconcile job", extra={"job_id": record.job_id})
        environment = environments.get(attempt.job_queue) or ComputeEnvironmentState(name=attempt.job_queue)
        finding = stuck_finding(record.job_id, record.request, batch_job, environment, at)
        if finding:
            findings.append(finding)
    result = report(sweep_id, at, findings, reconciled)
    ports.health.save_report(result)
    ports.metrics.add(MetricName.STUCK_JOBS, sum(1 for f in findings if f.jobs and f.severity != Severity.INFO))
    ports.metrics.add(
        MetricName.INVALID_COMPUTE_ENVIRONMENTS,
        sum(1 for f in findings if f.kind == FindingKind.COMPUTE_ENVIRONMENT_INVALID),
    )
    ports.metrics.add(MetricName.RECONCILED_EVENTS, reconciled)
    return result


def _reconcile(record: JobRecord, attempt: AttemptRecord, batch_job: BatchJobState, at: str, ports: Ports) -> int:
    """1 when the sweep caught up on something the events missed: a status, or a lost SendTaskSuccess."""
    if missed_event(attempt, batch_job):
        record_batch_event(BatchJobEvent(at=at, job=batch_job), ports)
        return 1
    return 1 if resume(record, ports) else 0
