"""Waiting without polling: parked task tokens, Batch state-change events, and resuming the workflow.

The wait Lambda stores its token and then reads the attempt's status; job_events stores the status and
then reads the token. Both writes go first, so at least one side sees both and resumes the workflow;
when both do, the second `SendTaskSuccess` is refused by Step Functions and ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from functions.shared.domain.batch import BatchJobEvent
from functions.shared.domain.errors import JobNotFound
from functions.shared.domain.lifecycle import job_status_for_batch, parse_batch_job_name, wait_satisfied
from functions.shared.domain.records import (
    ActiveJob,
    AttemptRecord,
    AttemptUpdate,
    JobRecord,
    JobWrite,
    Wait,
    WaitClear,
)
from functions.shared.domain.steps import WaitInput, WaitResult
from functions.shared.domain.vocabulary import AttemptStatus, BatchStatus, WaitPhase
from functions.shared.observability import logger
from functions.shared.ports import Ports
from functions.shared.usecases.costing import record_attempt_cost, unpriced_cost


def wait_result(attempt: AttemptRecord) -> WaitResult:
    """The resumed wait's output, from the attempt as the record holds it."""
    assert attempt.batch_status is not None
    return WaitResult(
        status=attempt.batch_status,
        at=attempt.batch_status_at,
        exit_code=attempt.exit_code,
        started_at=attempt.started_at,
        stopped_at=attempt.stopped_at,
        status_reason=attempt.status_reason,
        runtime_seconds=attempt.runtime_seconds,
    )


def resume(record: JobRecord | ActiveJob, ports: Ports) -> list[WaitPhase]:
    """Send every satisfied wait's token, then forget the spent tokens (ours, or spent already)."""
    resumed, spent = _send_satisfied(record, ports)
    for clear in spent:
        ports.jobs.clear_wait(clear.job_id, clear.phase, clear.token)
    return resumed


def _send_satisfied(record: JobRecord | ActiveJob, ports: Ports) -> tuple[list[WaitPhase], list[WaitClear]]:
    """Send every satisfied wait's token: the waits it resumed, and the tokens now spent (ours, or spent already)."""
    resumed: list[WaitPhase] = []
    spent: list[WaitClear] = []
    for phase, wait in list(record.waits.items()):
        attempt = record.attempts.get(wait.attempt)
        if attempt is None or not wait_satisfied(phase, attempt.batch_status):
            continue
        if ports.workflow.send_task_success(wait.token, wait_result(attempt).model_dump_json()):
            resumed.append(phase)
        spent.append(WaitClear(record.job_id, phase, wait.token))
    return resumed, spent


def park_wait(payload: WaitInput, ports: Ports) -> list[WaitPhase]:
    """WaitForJobToStart/ToFinish: store the token, then resume at once if the event came first."""
    record = ports.jobs.store_wait(
        payload.job_id, payload.phase, Wait(attempt=payload.attempt, token=payload.task_token)
    )
    return resume(record, ports)


def record_batch_event(event: BatchJobEvent, ports: Ports) -> dict[str, Any]:
    """job_events: record a Batch job state change on its attempt and timeline, and resume waits."""
    update = attempt_update(event)
    if isinstance(update, str):
        return {"ignored": update}
    job_id, number, status = update.job_id, update.number, update.fields["batch_status"]
    record = ports.jobs.update_attempt(job_id, number, update.fields, if_missing=update.if_missing)
    if record is None:
        # Stale or duplicate (EventBridge is at-least-once, and the sweep replays): nothing new to record,
        # but a redelivery after a failed write or SendTaskSuccess must still finish that work.
        try:
            record = ports.jobs.get_job(job_id)
        except JobNotFound:
            return {"ignored": "not a job of this deployment", "job_id": job_id}
        ignored = _catch_up(event, number, record, ports)
        if ignored is not None:
            return ignored
        return {"ignored": "stale or duplicate event", "job_id": job_id, "resumed": resume(record, ports)}
    _advance_recorded(event, number, record, ports)
    if status.ended:
        # Every attempt that ends is priced, whether the job succeeded, failed, fell back or was cancelled.
        record_attempt_cost(job_id, number, ports, record=record)
    return {"job_id": job_id, "attempt": number, "status": status, "resumed": resume(record, ports)}


def replay_batch_events(
    events: Sequence[BatchJobEvent], ports: Ports, along: Sequence[JobWrite] = ()
) -> tuple[int, list[bool]]:
    """The sweep's replays: many Batch events, each recorded as record_batch_event records one, in calls that grow
    with pages of 100 jobs, not with jobs: the attempts' updates written together (with the `along` writes), the
    records read back together (waits are judged after the write, as the wait protocol above asks), the ended
    attempts priced together, the spent tokens forgotten together. Returns how many events it replayed, and
    whether each `along` write applied."""
    updates = [(event, update) for event in events if isinstance(update := attempt_update(event), AttemptUpdate)]
    written = ports.jobs.write_many([update for _, update in updates] + list(along))
    records = ports.jobs.get_jobs([update.job_id for _, update in updates])
    costs: list[JobWrite] = []
    resumable: list[JobRecord] = []
    for (event, update), applied in zip(updates, written[: len(updates)], strict=True):
        record = records.get(update.job_id)
        if record is None or update.number not in record.attempts:
            continue
        try:
            if not applied:
                if _catch_up(event, update.number, record, ports) is not None:
                    continue
            else:
                _advance_recorded(event, update.number, record, ports)
                cost = unpriced_cost(record, update.number, ports) if update.fields["batch_status"].ended else None
                if cost is not None:
                    costs.append(AttemptUpdate(update.job_id, update.number, {}, if_missing={"cost": cost}))
            resumable.append(record)
        except Exception:
            # One job's trouble must not stop the replay of the others.
            logger.exception("could not replay the event", extra={"job_id": update.job_id})
    if costs:
        ports.jobs.write_many(costs)
    _resume_many(resumable, ports)
    return len(updates), written[len(updates) :]


def _resume_many(records: Sequence[JobRecord | ActiveJob], ports: Ports) -> list[list[WaitPhase]]:
    """resume, for many records: every satisfied wait's token sent, the spent ones forgotten together."""
    resumed: list[list[WaitPhase]] = []
    spent: list[JobWrite] = []
    for record in records:
        try:
            phases, cleared = _send_satisfied(record, ports)
        except Exception:
            logger.exception("could not resume the job's waits", extra={"job_id": record.job_id})
            phases, cleared = [], []
        resumed.append(phases)
        spent += cleared
    if spent:
        ports.jobs.write_many(spent)
    return resumed


def attempt_update(event: BatchJobEvent) -> AttemptUpdate | str:
    """What a Batch job state change records on its attempt (or why the event is none of ours)."""
    parsed = parse_batch_job_name(event.job.job_name)
    if parsed is None:
        return "not a GPU Pilot job"
    if event.job.status not in BatchStatus.__members__:
        return f"unknown status {event.job.status!r}"
    job_id, number = parsed
    status = BatchStatus(event.job.status)
    job = event.job
    fields = {
        "batch_status": status,
        "batch_status_at": event.at,
        "status": AttemptStatus(status.value),
        "status_reason": job.status_reason,
        "started_at": job.started_at,
        "stopped_at": job.stopped_at,
        "exit_code": job.exit_code,
        "container_reason": job.container_reason,
        "container_instance_arn": job.container_instance_arn,
        "runtime_seconds": job.runtime_seconds,
    }
    # A submit whose record write failed still gets its Batch job id, so it can be terminated.
    return AttemptUpdate(job_id, number, fields, if_missing={"batch_job_id": job.job_id or None})


def _catch_up(event: BatchJobEvent, number: int, record: JobRecord, ports: Ports) -> dict[str, Any] | None:
    """A stale or duplicate event: keep Batch's newest words for a RUNNABLE job (its answer: the waits are left
    alone), else finish what a failed write left undone, the job's status for what its attempt recorded (None:
    its waits may be resumed)."""
    job_id, job = record.job_id, event.job
    status = BatchStatus(job.status)
    recorded = record.attempts.get(number)
    if recorded is None:
        return {"ignored": "no such attempt", "job_id": job_id}
    if recorded.batch_status == status and job.status_reason and job.status_reason != recorded.status_reason:
        # Batch's reason for a RUNNABLE job changes without its status changing: keep the newest words.
        entry = record.entry_for(job_status_for_batch(status), number)
        ports.jobs.note_reason(job_id, number, status, job.status_reason, entry)
        return {"job_id": job_id, "attempt": number, "status": status, "reason": job.status_reason}
    _advance_for_batch(job_id, number, recorded.batch_status, recorded.batch_status_at or event.at, ports)
    return None


def _advance_recorded(event: BatchJobEvent, number: int, record: JobRecord, ports: Ports) -> None:
    """The job's status for the Batch status just recorded on its attempt."""
    job = event.job
    status = BatchStatus(job.status)
    moment = job.started_at if status == BatchStatus.RUNNING and job.started_at else event.at
    _advance_for_batch(record.job_id, number, status, moment, ports, reason=job.status_reason, record=record)


def _advance_for_batch(
    job_id: str,
    number: int,
    status: BatchStatus | None,
    at: str,
    ports: Ports,
    reason: str | None = None,
    record: JobRecord | None = None,
) -> None:
    """Move the job to what its attempt's Batch status stands for (a no-op if it is there already).

    Final statuses are the workflow's to record (RecordCost/RecordFailure), with the cost.
    """
    if status is None:
        return
    job_status = job_status_for_batch(status)
    if job_status.finished:
        return
    entry = record.entry_for(job_status, number) if record is not None else None
    if record is not None and entry is not None and reason:
        # Already there (SubmitBatchJob moved it first): Batch's words explain that entry, in the write the
        # advance would have spent on finding the job there.
        if record.timeline[entry].reason != reason:
            ports.jobs.note_reason(job_id, number, status, reason, entry)
        return
    ports.jobs.advance(job_id, job_status, attempt=number, at=at, reason=reason)
