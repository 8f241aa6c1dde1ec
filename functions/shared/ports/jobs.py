"""The ports of jobs: the job record, AWS Batch's jobs, the GpuJob workflow, and what the jobs printed (CloudWatch
Logs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from functions.shared.ports.hosts import HostNotes

if TYPE_CHECKING:  # annotations only: a handler imports the domain modules it uses, not all of them
    from functions.shared.domain.core.vocabulary import BatchStatus, JobStatus, WaitPhase
    from functions.shared.domain.fleet.batch import BatchJobState
    from functions.shared.domain.jobs.logs import LogPage
    from functions.shared.domain.jobs.records import ActiveJob, AttemptRecord, JobRecord, Ownership, Wait
    from functions.shared.domain.jobs.retries import BatchRetry
    from functions.shared.domain.jobs.writes import JobWrite
    from functions.shared.domain.requests.job_request import JobRequest


class JobLogs(Protocol):
    """What jobs printed: CloudWatch Logs streams."""

    def read(self, log_group: str, log_stream: str, next_token: str | None) -> LogPage:
        """A page of the stream, oldest first, from `next_token` (None: its start); empty while it does not exist."""
        ...


class JobStore(HostNotes, Protocol):
    """The job record; every write that can race is conditional."""

    def create_job(self, job_id: str, request: JobRequest, ownership: Ownership | None = None) -> JobRecord:
        """Write a new SUBMITTED job: JobAlreadyExists rather than overwrite one. With an ownership that commits a
        budget, the commitment is written to its team's ledger in the same transaction: BudgetFull when a budget
        refuses it (and nothing is written)."""
        ...

    def get_job(self, job_id: str) -> JobRecord:
        """The record; raises JobNotFound."""
        ...

    def list_jobs(
        self, status: JobStatus | None, limit: int, next_token: str | None, team: str | None = None
    ) -> tuple[list[JobRecord], str | None]:
        """Newest first, a page at a time; `team`: that team's jobs only."""
        ...

    def set_execution_arn(self, job_id: str, execution_arn: str) -> None: ...

    def advance(
        self,
        job_id: str,
        status: JobStatus,
        attempt: int,
        at: str | None = None,
        fields: dict[str, Any] | None = None,
        reason: str | None = None,
    ) -> bool:
        """Move the job to `status` unless it is already past it; False when it was."""
        ...

    def finish(
        self,
        job_id: str,
        status: JobStatus,
        at: str | None = None,
        fields: dict[str, Any] | None = None,
        reason: str | None = None,
    ) -> bool:
        """Record the final status once (`reason` on its timeline entry); False when the job had already finished."""
        ...

    def put_attempt(self, job_id: str, number: int, attempt: AttemptRecord) -> AttemptRecord:
        """Create attempt `number` once; returns the stored attempt (the existing one on a retry)."""
        ...

    def update_attempt(
        self,
        job_id: str,
        number: int,
        fields: dict[str, Any],
        if_missing: dict[str, Any] | None = None,
        timeline_reason: tuple[int, str, str] | None = None,
    ) -> JobRecord | None:
        """Set AttemptRecord fields; with `batch_status`, only if it moves the attempt forward. None: stale.
        `timeline_reason` (index, reason, when it was learnt) sets that timeline entry's reason in the same write."""
        ...

    def note_reason(
        self,
        job_id: str,
        number: int,
        status: BatchStatus,
        reason: str,
        timeline_index: int | None = None,
        at: str | None = None,
    ) -> JobRecord | None:
        """Set the attempt's status_reason while its Batch status is still `status` (Batch's reason for a
        RUNNABLE job changes without its status changing), and the reason of timeline entry `timeline_index`
        (the one that status added, learnt `at`) in the same write; the record after it, None when the attempt
        moved on."""
        ...

    def note_retries(self, job_id: str, number: int, retries: list[BatchRetry]) -> bool:
        """Set the attempt's Batch retries to `retries` unless it holds as many already (a list only grows: a write
        of fewer, from an older event, changes nothing); False when it did."""
        ...

    def store_wait(self, job_id: str, phase: WaitPhase, wait: Wait) -> JobRecord: ...

    def clear_wait(self, job_id: str, phase: WaitPhase, token: str) -> None: ...

    def get_jobs(self, job_ids: Sequence[str]) -> dict[str, JobRecord]:
        """Several records at once, read consistently (unknown ids are left out)."""
        ...

    def write_many(self, writes: Sequence[JobWrite]) -> list[bool]:
        """Many writes in few calls, each exactly as conditional as its single form and applied or refused on its
        own (True where it applied); a job's writes apply in the order given."""
        ...

    def active_jobs(self, max_items: int = 20000) -> list[ActiveJob]:
        """Every unfinished job, as the sweep reads it (a sparse index: never a scan, never one hot partition)."""
        ...

    def jobs_created_between(self, start: str, end: str, max_items: int = 5000) -> list[JobRecord]: ...


class BatchJobs(Protocol):
    """AWS Batch jobs and job definitions."""

    def register_job_definition(self, spec: dict[str, Any]) -> str:
        """Register a revision; returns its ARN."""
        ...

    def submit_job(
        self, name: str, job_queue: str, job_definition: str, tags: dict[str, str], share: str | None = None
    ) -> str:
        """Submit; returns the Batch job id."""
        ...

    def find_job(self, job_queue: str, name: str) -> BatchJobState | None:
        """The job of that name in the queue, if any."""
        ...

    def describe_jobs(self, job_ids: list[str]) -> list[BatchJobState]: ...

    def list_jobs(self, job_queue: str, status: str) -> list[BatchJobState]:
        """Every job of that status in the queue (ListJobs, a page of 100 at a time)."""
        ...

    def terminate_job(self, job_id: str, reason: str) -> None: ...


class Workflow(Protocol):
    """The GpuJob state machine."""

    def start_execution(self, name: str, execution_input: str) -> str:
        """Start one; returns its ARN."""
        ...

    def stop_execution(self, execution_arn: str, error: str, cause: str) -> None: ...

    def send_task_success(self, token: str, output: str) -> bool:
        """Resume a parked task; False when the token was spent already (resumed, timed out, stopped)."""
        ...
