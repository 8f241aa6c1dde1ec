"""Job status rules: ordering, Batch-to-job mapping, and which waits an event satisfies. Pure."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from functions.shared.models import JobStatus

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
    "SUBMITTED": JobStatus.RUNNABLE,
    "PENDING": JobStatus.RUNNABLE,
    "RUNNABLE": JobStatus.RUNNABLE,
    "STARTING": JobStatus.STARTING,
    "RUNNING": JobStatus.RUNNING,
    "SUCCEEDED": JobStatus.SUCCEEDED,
    "FAILED": JobStatus.FAILED,
}
_BATCH_RANK = {"SUBMITTED": 0, "PENDING": 1, "RUNNABLE": 2, "STARTING": 3, "RUNNING": 4, "SUCCEEDED": 9, "FAILED": 9}
BATCH_TERMINAL = frozenset({"SUCCEEDED", "FAILED"})
BATCH_STARTED = frozenset({"STARTING", "RUNNING"}) | BATCH_TERMINAL
BATCH_JOB_NAME = re.compile(r"^gpupilot-(?P<job_id>[a-z0-9]{8,40})-a(?P<attempt>\d{1,3})$")


def status_rank(status: JobStatus, attempt: int = 0) -> int:
    """Job statuses only move forward: a later attempt outranks every status of an earlier one."""
    if status.finished:
        return FINAL_RANK
    return attempt * 10 + _BASE_RANK[status]


def job_status_for_batch(batch_status: str) -> JobStatus:
    """The job status a Batch job status stands for."""
    return _BATCH_TO_JOB[batch_status]


def batch_rank(batch_status: str) -> int:
    """Order of Batch statuses within one attempt (events can arrive out of order)."""
    return _BATCH_RANK[batch_status]


def wait_satisfied(phase: str, batch_status: str | None) -> bool:
    """Whether a workflow waiting in `phase` ('start' or 'finish') may go on."""
    if batch_status is None:
        return False
    if phase == "start":
        return batch_status in BATCH_STARTED
    return batch_status in BATCH_TERMINAL


def billed_seconds(detail: dict[str, Any]) -> float | None:
    """Seconds the job held its instance: every Batch attempt (retries count), or None before it ran."""
    spans = [
        (a["stoppedAt"] - a["startedAt"]) / 1000
        for a in detail.get("attempts") or []
        if a.get("startedAt") is not None and a.get("stoppedAt") is not None
    ]
    if spans:
        return max(0.0, sum(spans))
    if detail.get("startedAt") is not None and detail.get("stoppedAt") is not None:
        return max(0.0, (detail["stoppedAt"] - detail["startedAt"]) / 1000)
    return None


def batch_job_name(job_id: str, attempt: int) -> str:
    """Batch job name for an attempt; events are traced back to the job by this name alone."""
    return f"gpupilot-{job_id}-a{attempt}"


def parse_batch_job_name(name: str) -> tuple[str, int] | None:
    """(job_id, attempt) of a Batch job we submitted, or None for anyone else's job."""
    match = BATCH_JOB_NAME.match(name or "")
    if not match:
        return None
    return match["job_id"], int(match["attempt"])


def now_iso() -> str:
    """Current UTC time, ISO 8601 with milliseconds and Z."""
    return iso_from_datetime(datetime.now(UTC))


def now_millis() -> float:
    """Current time in epoch milliseconds, as Batch reports its times."""
    return datetime.now(UTC).timestamp() * 1000


def iso_from_datetime(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def iso_from_millis(millis: int | float) -> str:
    """ISO time of an epoch-milliseconds timestamp, as Batch reports them."""
    return iso_from_datetime(datetime.fromtimestamp(millis / 1000, tz=UTC))


def normalize_iso(value: str) -> str:
    """Any ISO 8601 time (Batch events carry whole seconds) as UTC with milliseconds and Z."""
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return now_iso()
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return iso_from_datetime(moment)
