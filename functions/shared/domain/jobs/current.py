"""One attempt at a time: the attempt a job is on, how that attempt is billed, and the job's status as that attempt
stands. Pure.

The job's record moves a step behind its attempt: job_events records Batch's status on the attempt and then moves the
job, and the workflow records the job's outcome a state or two after Batch ended its attempt (RecordCost, the
fallback's EnsureJobQueue). What the API answers never shows the two apart: a job is never RUNNING beside an attempt
that ended.
"""

from __future__ import annotations

from typing import Any

from functions.shared.domain.capacity.offers import Candidate
from functions.shared.domain.core.vocabulary import AttemptStatus, BatchStatus, BilledCapacity, JobStatus
from functions.shared.domain.cost.attempts import capacity_type
from functions.shared.domain.jobs.lifecycle import attempt_of_rank, job_status_for_batch, status_rank
from functions.shared.domain.jobs.records import AttemptRecord, JobRecord, TimelineEntry


def moving_to(candidate: Candidate) -> dict[str, Any]:
    """What the job's record says of the attempt it moves on to, written as that attempt's pool is provisioned (before
    the attempt has an entry): its GPU type, region and how it is billed."""
    return {
        "instance_type": candidate.instance_type,
        "gpu_model": candidate.gpu_model,
        "region": candidate.region,
        "capacity_type": capacity_type(candidate.capacity, candidate.reservation, candidate.reserved),
    }


def current_number(record: JobRecord) -> int | None:
    """The attempt the job is on, from 1: the one its status last moved on (the next one while that one's pool is
    provisioned, before it has an entry), else its latest (a finished job's); None before its first."""
    number = None if record.status.finished else attempt_of_rank(record.status_rank)
    if number is not None:
        return number
    latest = record.latest_attempt()
    return latest[0] if latest else None


def current_attempt(record: JobRecord) -> AttemptRecord | None:
    """The entry of the attempt the job is on (None while that attempt's pool is provisioned)."""
    number = current_number(record)
    return record.attempts.get(number) if number is not None else None


def billed_now(record: JobRecord) -> BilledCapacity | None:
    """How the attempt the job is on is billed: its entry's, else what its provisioning wrote."""
    attempt = current_attempt(record)
    if attempt is None:
        return record.capacity_type
    return capacity_type(attempt.capacity, attempt.reservation, attempt.reserved)


def shown_status(record: JobRecord) -> JobStatus:
    """The job's status, never behind the attempt it is on. Once Batch ended that attempt, what the workflow does
    next is decided by the same facts it reads: SUCCEEDED; FAILED; SELECTING (its next candidate, or giving up) when
    it falls back from it (a diagnosis, a spot reclaim, a pool that could not take it); an outcome once the attempt is
    priced, so that a job that reads SUCCEEDED or FAILED has its cost. Before that, the status its Batch status
    stands for, when job_events has recorded it on the attempt and not yet on the job."""
    attempt = None if record.status.finished else current_attempt(record)
    if attempt is None:
        return record.status
    leaving = attempt.fell_back is not None or attempt.reclaimed or attempt.status == AttemptStatus.NOT_SUBMITTED
    if leaving and (attempt.batch_status is None or attempt.batch_status.ended):
        return JobStatus.SELECTING
    if attempt.batch_status is not None and attempt.batch_status.ended:
        if attempt.cost is None:
            # An outcome is shown with its cost: job_events prices the attempt right after it records the end
            # (a type it cannot price waits for the workflow's record, as before).
            return record.status
        return JobStatus.SUCCEEDED if attempt.batch_status == BatchStatus.SUCCEEDED else JobStatus.FAILED
    if attempt.batch_status is None:
        return record.status
    following = job_status_for_batch(attempt.batch_status)
    number = current_number(record) or 0
    return following if status_rank(following, number) > record.status_rank else record.status


def outcome_entry(record: JobRecord, status: JobStatus) -> TimelineEntry | None:
    """The timeline entry the workflow appends for the outcome `status` shows ahead of the record (RecordCost's:
    when the attempt stopped, and how it exited), or None when the record holds it already."""
    attempt = current_attempt(record)
    if record.status.finished or not status.finished or attempt is None:
        return None
    at = attempt.stopped_at or attempt.batch_status_at or record.updated_at
    if status == JobStatus.SUCCEEDED:
        exited = f"exited with {attempt.exit_code}" if attempt.exit_code is not None else None
        return TimelineEntry(status=status, at=at, reason=exited)
    number = current_number(record) or 0
    words = failure_words(number, attempt, attempt.exit_code, attempt.status_reason)
    return TimelineEntry(status=status, at=at, reason=words)


def failure_words(number: int, attempt: AttemptRecord | None, exit_code: int | None, status_reason: str | None) -> str:
    """Which attempt failed and why: `attempt 2 (g5.xlarge on-demand) exited with 1: <Batch's reasons>`."""
    where = f"attempt {number}" + (f" ({attempt.instance_type} {attempt.capacity.value})" if attempt else "")
    exited = f" exited with {exit_code}" if exit_code is not None else " failed"
    reasons = [r for r in (status_reason, attempt.container_reason if attempt else None) if r]
    return f"{where}{exited}" + (f": {'; '.join(dict.fromkeys(reasons))}" if reasons else "")
