"""Waiting without polling: parked task tokens, Batch state-change events, and resuming the workflow.

The wait Lambda stores its token and then reads the attempt's status; job_events stores the status and
then reads the token. Both writes go first, so at least one side sees both and resumes the workflow;
when both do, the second `SendTaskSuccess` is refused by Step Functions and ignored.
"""

from __future__ import annotations

from typing import Any

from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.core.errors import JobNotFound
from functions.shared.domain.core.vocabulary import AttemptStatus, BatchStatus, DiagnosisCategory, WaitPhase
from functions.shared.domain.diagnosis.verdicts import batch_verdict, queue_verdict
from functions.shared.domain.fleet.batch import BatchJobEvent
from functions.shared.domain.jobs.lifecycle import job_status_for_batch, parse_batch_job_name, wait_satisfied
from functions.shared.domain.jobs.records import ActiveJob, AttemptRecord, JobRecord, Wait
from functions.shared.domain.jobs.steps import WaitInput, WaitResult
from functions.shared.domain.jobs.writes import AttemptUpdate, WaitClear
from functions.shared.ports import Ports
from functions.shared.usecases.cost.pricing import record_attempt_cost
from functions.shared.usecases.jobs.retries import note_batch_retries


def wait_result(
    attempt: AttemptRecord, phase: WaitPhase = WaitPhase.FINISH, verdict: DiagnosisCategory | None = None
) -> WaitResult:
    """The resumed wait's output, from the attempt as the record holds it (and the verdict that resumed it)."""
    assert attempt.batch_status is not None
    return WaitResult(
        status=attempt.batch_status,
        at=attempt.batch_status_at,
        exit_code=attempt.exit_code,
        started_at=attempt.started_at,
        stopped_at=attempt.stopped_at,
        status_reason=attempt.status_reason,
        runtime_seconds=attempt.runtime_seconds,
        verdict=verdict,
        reclaimed=phase == WaitPhase.FINISH and attempt.reclaimed,
    )


def pending_verdict(attempt: AttemptRecord, wait: Wait) -> tuple[DiagnosisCategory, str] | None:
    """Batch's verdict on a waiting attempt that the start wait can act on now, and its words: Batch's reason for the
    attempt's own job (verdicts.batch_verdict), else its verdict on the job heading the attempt's queue
    (verdicts.queue_verdict, queue_verdicts.py); one it has not acted on yet, for a job with a next candidate to fall
    back to (with none, the wait keeps its stuck_after: capacity may come back)."""
    if attempt.batch_status is None or attempt.batch_status.started or wait.next_candidate is None:
        return None
    own = batch_verdict(attempt.status_reason)
    category, reason = (
        (own, attempt.status_reason) if own else (queue_verdict(attempt.queue_verdict), attempt.queue_verdict)
    )
    if category is None or reason is None or attempt.verdict == reason:
        return None
    return category, reason


def resume(record: JobRecord | ActiveJob, ports: Ports) -> list[WaitPhase]:
    """Send every satisfied wait's token, then forget the spent tokens (ours, or spent already). A start wait is
    also satisfied by Batch's verdict: the workflow then diagnoses at once (a verdict resumes a wait once)."""
    resumed, writes = send_satisfied(record, ports)
    for write in writes:
        if isinstance(write, WaitClear):
            ports.jobs.clear_wait(write.job_id, write.phase, write.token)
        else:
            ports.jobs.update_attempt(write.job_id, write.number, write.fields)
    return resumed


def send_satisfied(
    record: JobRecord | ActiveJob, ports: Ports
) -> tuple[list[WaitPhase], list[AttemptUpdate | WaitClear]]:
    """Send every satisfied wait's token: the waits it resumed, and the writes that follow the sends, in order (the
    verdicts that resumed a wait, the tokens now spent: ours, or spent already)."""
    resumed: list[WaitPhase] = []
    writes: list[AttemptUpdate | WaitClear] = []
    for phase, wait in list(record.waits.items()):
        attempt = record.attempts.get(wait.attempt)
        if attempt is None:
            continue
        verdict = pending_verdict(attempt, wait) if phase == WaitPhase.START else None
        if not wait_satisfied(phase, attempt.batch_status) and verdict is None:
            continue
        category = verdict[0] if verdict else None
        if ports.workflow.send_task_success(wait.token, wait_result(attempt, phase, category).model_dump_json()):
            resumed.append(phase)
        if verdict is not None:
            # Written after the token is sent, so a failed send is retried by the next event or the sweep.
            writes.append(AttemptUpdate(record.job_id, wait.attempt, {"verdict": verdict[1]}))
        writes.append(WaitClear(record.job_id, phase, wait.token))
    return resumed, writes


def park_wait(payload: WaitInput, ports: Ports) -> list[WaitPhase]:
    """WaitForJobToStart/ToFinish: store the token (and until when the workflow waits, and what it tries next),
    then resume at once if the event came first."""
    wait = Wait(
        attempt=payload.attempt,
        token=payload.task_token,
        since=now_iso(),
        timeout_seconds=payload.timeout_seconds,
        next_candidate=payload.next_candidate(),
    )
    record = ports.jobs.store_wait(payload.job_id, payload.phase, wait)
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
        answer, record = catch_up(event, number, record, ports)
        if "resumed" in answer:
            answer["resumed"] = resume(record, ports)
        # Batch's retry goes back to RUNNABLE: an event the attempt's forward-only status drops, but its retries keep.
        note_batch_retries(event, number, record, ports)
        return answer
    advance_recorded(event, number, record, ports)
    if status.ended:
        # Every attempt that ends is priced, whether the job succeeded, failed, fell back or was cancelled.
        record_attempt_cost(job_id, number, ports, record=record)
    answer = {"job_id": job_id, "attempt": number, "status": status, "resumed": resume(record, ports)}
    note_batch_retries(event, number, record, ports)
    return answer


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
        # Only what the event knows: ListJobs (the sweep's replays) gives no attempts.
        "host_terminations": job.host_terminations or None,
        "host_terminated": job.host_terminated or None,
        "log_stream": job.log_stream,
    }
    # A submit whose record write failed still gets its Batch job id, so it can be terminated.
    return AttemptUpdate(job_id, number, fields, if_missing={"batch_job_id": job.job_id or None})


def catch_up(event: BatchJobEvent, number: int, record: JobRecord, ports: Ports) -> tuple[dict[str, Any], JobRecord]:
    """A stale or duplicate event: what record_batch_event answers for it, and the newest record read; with
    "resumed" (empty yet), the record's waits are to be resumed next, without, left alone. Batch's newest words for a
    job still waiting are kept (they may be a verdict the start wait acts on), and the waits are then judged from the
    record that write returns: a wait parked between the read and the write is in it (the wait Lambda, reading
    before the words were written, could not see them). Otherwise what a failed write left undone is finished, the
    job's status for what its attempt recorded."""
    job_id, job = record.job_id, event.job
    status = BatchStatus(job.status)
    recorded = record.attempts.get(number)
    if recorded is None:
        return {"ignored": "no such attempt", "job_id": job_id}, record
    if recorded.batch_status == status and job.status_reason and job.status_reason != recorded.status_reason:
        # Batch's reason for a RUNNABLE job changes without its status changing (a queue-blocked event, or the
        # sweep seeing it): keep the newest words, and resume a start wait they are a verdict for.
        entry = record.entry_for(job_status_for_batch(status), number)
        noted = ports.jobs.note_reason(job_id, number, status, job.status_reason, entry, at=event.at)
        if noted is None:
            return {"ignored": "the attempt moved on", "job_id": job_id}, record
        answer = {"job_id": job_id, "attempt": number, "status": status, "reason": job.status_reason, "resumed": []}
        return answer, noted
    _advance_for_batch(job_id, number, recorded.batch_status, recorded.batch_status_at or event.at, ports)
    return {"ignored": "stale or duplicate event", "job_id": job_id, "resumed": []}, record


def advance_recorded(event: BatchJobEvent, number: int, record: JobRecord, ports: Ports) -> None:
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
            ports.jobs.note_reason(job_id, number, status, reason, entry, at=at)
        return
    ports.jobs.advance(job_id, job_status, attempt=number, at=at, reason=reason)
