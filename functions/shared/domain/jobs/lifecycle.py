"""Job status rules: ordering, Batch-to-job mapping, which waits a Batch status satisfies, names. Pure."""

from __future__ import annotations

import re

from functions.shared.domain.core.vocabulary import BatchStatus, JobStatus, WaitPhase

FINAL_RANK = 1_000_000
_BASE_RANK = {
    JobStatus.SUBMITTED: 0,
    JobStatus.SELECTING: 1,
    JobStatus.PROVISIONING: 2,
    JobStatus.RUNNABLE: 3,
    JobStatus.STARTING: 4,
    JobStatus.RUNNING: 5,
}
_BATCH_TO_JOB = {
    BatchStatus.SUBMITTED: JobStatus.RUNNABLE,
    BatchStatus.PENDING: JobStatus.RUNNABLE,
    BatchStatus.RUNNABLE: JobStatus.RUNNABLE,
    BatchStatus.STARTING: JobStatus.STARTING,
    BatchStatus.RUNNING: JobStatus.RUNNING,
    BatchStatus.SUCCEEDED: JobStatus.SUCCEEDED,
    BatchStatus.FAILED: JobStatus.FAILED,
}
_BATCH_RANK = {
    BatchStatus.SUBMITTED: 0,
    BatchStatus.PENDING: 1,
    BatchStatus.RUNNABLE: 2,
    BatchStatus.STARTING: 3,
    BatchStatus.RUNNING: 4,
    BatchStatus.SUCCEEDED: 9,
    BatchStatus.FAILED: 9,
}
BATCH_JOB_NAME = re.compile(r"^gpupilot-(?P<job_id>[a-z0-9]{8,40})-a(?P<attempt>\d{1,3})$")


def status_rank(status: JobStatus, attempt: int = 0) -> int:
    """Job statuses only move forward: a later attempt outranks every status of an earlier one."""
    if status.finished:
        return FINAL_RANK
    return attempt * 10 + _BASE_RANK[status]


def attempt_of_rank(rank: int) -> int | None:
    """The attempt an unfinished job's status_rank was reached on (None before its first attempt, or once finished)."""
    if rank >= FINAL_RANK or rank < 10:
        return None
    return rank // 10


def job_status_for_batch(batch_status: BatchStatus) -> JobStatus:
    """The job status a Batch job status stands for."""
    return _BATCH_TO_JOB[batch_status]


def batch_rank(batch_status: BatchStatus) -> int:
    """Order of Batch statuses within one attempt (events can arrive out of order)."""
    return _BATCH_RANK[batch_status]


def wait_satisfied(phase: WaitPhase, batch_status: BatchStatus | None) -> bool:
    """Whether a workflow waiting in `phase` may go on."""
    if batch_status is None:
        return False
    status = BatchStatus(batch_status)
    return status.started if phase == WaitPhase.START else status.ended


def batch_job_name(job_id: str, attempt: int) -> str:
    """Batch job name for an attempt; events are traced back to the job by this name alone."""
    return f"gpupilot-{job_id}-a{attempt}"


def parse_batch_job_name(name: str) -> tuple[str, int] | None:
    """(job_id, attempt) of a Batch job we submitted, or None for anyone else's job."""
    match = BATCH_JOB_NAME.match(name or "")
    if not match:
        return None
    return match["job_id"], int(match["attempt"])
