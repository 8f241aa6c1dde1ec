"""What a job printed: a page of its attempt's CloudWatch Logs stream, as `GET /jobs/{job_id}/logs` answers it."""

from __future__ import annotations

from pydantic import Field

from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.vocabulary import AttemptStatus, JobStatus


class LogEvent(DomainModel):
    at: str = Field(description="When the line was written (ISO 8601, UTC)")
    message: str


class LogPage(DomainModel):
    """One page of a log stream, oldest first; `next_token` is the token to read on from (the same one that was
    given when the stream has nothing more yet: CloudWatch Logs' end of stream)."""

    events: list[LogEvent] = Field(default_factory=list)
    next_token: str | None = None


class JobLogs(DomainModel):
    """Body of `GET /jobs/{job_id}/logs`."""

    job_id: str
    status: JobStatus
    attempt: int = Field(description="The attempt read (1 is the first)")
    attempt_status: AttemptStatus
    log_group: str
    log_stream: str | None = Field(
        default=None, description="null until the attempt runs: Batch names its stream when it reaches RUNNING"
    )
    events: list[LogEvent] = Field(default_factory=list)
    next_token: str | None = Field(
        default=None,
        description="Read on with it; the same token as the one sent means the stream has nothing more yet",
    )
