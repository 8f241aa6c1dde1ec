"""The host agent's reports of an attempt: its fields recorded (a report overtaken by a later one changes nothing), and
a job whose GPUs idled past its idle_policy warned about or cancelled, with the reason in its record."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from functions.shared.domain.core.errors import JobAlreadyFinished, JobNotFound
from functions.shared.domain.cost.idle import IdleWarning
from functions.shared.domain.jobs.agent_reports import AgentReport, idle_action, idle_reason
from functions.shared.domain.jobs.ec2_events import Ec2InstanceEvent
from functions.shared.domain.jobs.records import AttemptRecord
from functions.shared.domain.requests.host_agent import IdleAction
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.observability import logger
from functions.shared.ports import Ports
from functions.shared.usecases.cost.pricing import price_attempt
from functions.shared.usecases.jobs.ec2_events import record_instance_event
from functions.shared.usecases.jobs.gpu_idle import charge_gpu_idle
from functions.shared.usecases.jobs.queries import cancel_job


def record_agent_event(event: dict[str, Any], ports: Callable[[], Ports]) -> dict[str, Any]:
    """An event job_events got that is not Batch's: a host agent's report or EC2's signal about a spot host
    recorded, anything else noted."""
    signal = Ec2InstanceEvent.from_eventbridge(event)
    if signal is not None:
        return record_instance_event(signal, ports())
    report = AgentReport.from_eventbridge(event)
    if report is None:
        logger.info("batch event noted", extra={"detail_type": event.get("detail-type")})
        return {"ignored": event.get("detail-type") or "not a Batch job state change"}
    return record_agent_report(report, ports())


def record_agent_report(report: AgentReport, ports: Ports) -> dict[str, Any]:
    try:
        record = ports.jobs.get_job(report.job_id)
    except JobNotFound:
        return {"ignored": f"no job {report.job_id}"}
    attempt = record.attempt(report.attempt)
    if attempt is None:
        return {"ignored": f"job {report.job_id} has no attempt {report.attempt}"}
    fields = report.attempt_fields(attempt.started_at)
    updated = ports.jobs.update_attempt(report.job_id, report.attempt, fields)
    outcome: dict[str, Any] = {"job_id": report.job_id, "attempt": report.attempt, "recorded": updated is not None}
    if updated is not None:
        charge_gpu_idle(report.job_id, report.attempt, updated.attempts[report.attempt], ports)
    action = idle_action(report, record.request)
    if action is None:
        return outcome
    reason = idle_reason(record.request)
    if action == IdleAction.CANCEL:
        try:
            cancel_job(report.job_id, ports, reason=reason)
            outcome["cancelled"] = reason
        except JobAlreadyFinished:
            outcome["ignored"] = "the job had already ended"
    else:
        warned = idle_warning(report, record.request, attempt, ports)
        fields = {"warning": reason, "idle_warning": warned.model_dump(mode="json")}
        ports.jobs.update_attempt(report.job_id, report.attempt, fields)
        outcome["warned"] = reason
    return outcome


def idle_warning(report: AgentReport, request: JobRequest, attempt: AttemptRecord, ports: Ports) -> IdleWarning:
    """What the sweep's GPU_IDLE finding says of the job: its GPUs, and the price they idle at (the attempt's hourly
    price and share, as it will be priced when it ends; unpriced when AWS gives no price now)."""
    assert request.idle_policy is not None
    try:
        price = price_attempt(request, attempt, 0.0, ports.in_region(attempt.region))
    except Exception:
        # A price AWS will not give now must not lose the warning: the finding says its cost is unknown.
        logger.exception("could not price the idle job's attempt", extra={"job_id": report.job_id})
        price = None
    return IdleWarning(at=report.at, after_minutes=request.idle_policy.after_minutes, gpus=request.gpus, price=price)
