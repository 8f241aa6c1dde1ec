"""Batch's retries of an attempt: each of Batch's own attempts of the attempt's Batch job that ended and that Batch
ran again (its host failed it, EC2 reclaimed the spot host, a GPU check failed), where it ran and why it ended. Pure.

They are Batch's attempts of one GPU Pilot attempt (the job definition's retryStrategy), never counted against
`max_attempts`; the job's status does not move back for them, so without these a retried job reads as if nothing
happened.
"""

from __future__ import annotations

import re

from pydantic import Field

from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.fleet.batch import BatchAttempt, BatchJobState

# Batch's words for an attempt whose host went away: `Host EC2 (instance i-0123...) terminated.`
TERMINATED_HOST = re.compile(r"^Host EC2 \(instance (?P<instance>i-[0-9a-f]+)\)")


class BatchRetry(DomainModel):
    """One of Batch's attempts of an attempt's Batch job that ended and was run again."""

    batch_attempt: int = Field(description="Batch's own attempt number within the Batch job, from 1")
    container_instance_arn: str | None = Field(default=None, description="The ECS container instance it ran on")
    host: str | None = Field(
        default=None, description="The EC2 instance it ran on, when known (ECS names it for the container instance)"
    )
    reason: str = Field(description="Batch's words for its end: its statusReason, its container's reason or exit code")
    stopped_at: str | None = None


def batch_retries(job: BatchJobState) -> list[BatchRetry]:
    """The Batch job's attempts that Batch ran again: every one that ended while the job goes on, every one but the
    last once the job has ended (the last is the job's own end)."""
    tried = job.attempts[:-1] if job.status in ("SUCCEEDED", "FAILED") else job.attempts
    return [
        BatchRetry(
            batch_attempt=number,
            container_instance_arn=attempt.container_instance_arn,
            host=_terminated_host(attempt),
            reason=ended_words(attempt),
            stopped_at=attempt.stopped_at,
        )
        for number, attempt in enumerate(tried, start=1)
        if _ended(attempt)
    ]


def ended_words(attempt: BatchAttempt) -> str:
    """`Task failed to start; CannotStartContainerError: ...`, `Essential container in task exited; exit code 14`."""
    said = [words for words in (attempt.status_reason, attempt.reason) if words]
    if attempt.exit_code is not None and not attempt.reason:
        said.append(f"exit code {attempt.exit_code}")
    return "; ".join(said) or "ended without a reason given"


def _ended(attempt: BatchAttempt) -> bool:
    return attempt.stopped_at is not None or attempt.exit_code is not None or bool(attempt.status_reason)


def _terminated_host(attempt: BatchAttempt) -> str | None:
    """The instance Batch names when the host went away (a spot reclaim, a termination): no lookup needed then."""
    found = TERMINATED_HOST.match(attempt.status_reason or "")
    return found["instance"] if found else None
