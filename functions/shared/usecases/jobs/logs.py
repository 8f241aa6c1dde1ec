"""GET /jobs/{id}/logs: what a job's attempt printed, a page at a time."""

from __future__ import annotations

from functions.shared.domain.core.errors import AttemptNotFound
from functions.shared.domain.jobs.definitions import JOB_LOG_GROUP
from functions.shared.domain.jobs.logs import JobLogs
from functions.shared.domain.teams.identity import Caller
from functions.shared.ports import Ports
from functions.shared.usecases.jobs.queries import owned_job


def job_logs(
    job_id: str, attempt: int | None, next_token: str | None, ports: Ports, caller: Caller | None = None
) -> JobLogs:
    """A page of the attempt's log stream (default: the latest attempt that ran, else the latest); no events
    while the attempt has not run (Batch names its stream at RUNNING). Another team's job is not found."""
    record = owned_job(job_id, ports, caller)
    attempts = dict(record.ordered_attempts())
    if attempt is None:
        ran = [number for number, each in attempts.items() if each.log_stream]
        attempt = ran[-1] if ran else max(attempts, default=None)
    chosen = attempts.get(attempt) if attempt is not None else None
    if attempt is None or chosen is None:
        raise AttemptNotFound(job_id, attempt or 1, len(attempts))
    # Batch writes the attempt's output in the region it ran in.
    logs = ports.in_region(chosen.region).logs
    page = logs.read(JOB_LOG_GROUP, chosen.log_stream, next_token) if chosen.log_stream else None
    return JobLogs(
        job_id=job_id,
        status=record.status,
        attempt=attempt,
        attempt_status=chosen.status,
        log_group=JOB_LOG_GROUP,
        log_stream=chosen.log_stream,
        events=page.events if page else [],
        next_token=page.next_token if page else next_token,
    )
