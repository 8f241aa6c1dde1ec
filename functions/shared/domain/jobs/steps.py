"""What the GpuJob state machine passes to and from its Lambdas (the Step Functions console shows these)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from functions.shared.domain.capacity.offers import Candidate
from functions.shared.domain.core.clock import seconds_between
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.settings import DEFAULT_PROVISION_TIMEOUT_SECONDS
from functions.shared.domain.core.vocabulary import BatchStatus, CapacityType, DiagnosisCategory, WaitPhase
from functions.shared.domain.jobs.records import DiagnosisOutcome, NextCandidate
from functions.shared.domain.pools.specs import QueueStatus
from functions.shared.domain.requests.job_request import JobRequest


class NoGpuTypeAvailable(Exception):
    """No GPU offering fits the request (or all fallbacks are spent)."""


class Timeouts(DomainModel):
    stuck_after_seconds: int = Field(description="WaitForJobToStart times out after this, then diagnoses")
    finish_after_seconds: int = Field(description="WaitForJobToFinish gives up after this")
    queue_poll_seconds: int = Field(default=10, description="WaitForJobQueue: between checks of a new pool")
    provision_timeout_seconds: int = Field(
        default=DEFAULT_PROVISION_TIMEOUT_SECONDS,
        description="EnsureJobQueue: an attempt's pool not ready this long after its first check, it falls back",
    )


class ExecutionInput(DomainModel):
    """The GpuJob execution's input, written by the api when a job is submitted."""

    job_id: str
    request: JobRequest
    timeouts: Timeouts
    budgeted: bool = Field(default=False, description="The job commits against its team's budget: fallbacks re-check")
    team_gpus: str | None = Field(default=None, description="The consumable resource of its team's GPU cap")
    share: str | None = Field(default=None, description="Its team: its shareIdentifier in a fair-share pool")
    queue: dict[str, Any] = Field(default_factory=lambda: {"checks": 0})
    diagnosis: dict[str, Any] = Field(default_factory=lambda: {"checks": 0})


class Selection(DomainModel):
    candidates: list[Candidate]
    index: int = 0
    catalog: str = Field(default="snapshot", description="Where the GPU catalog came from: live or snapshot")
    elsewhere: str | None = Field(
        default=None, description="The capacity regions the request may not use that could serve it (said on failure)"
    )

    def current(self) -> Candidate:
        if self.index >= len(self.candidates):
            raise NoGpuTypeAvailable(f"all {len(self.candidates)} GPU offerings were tried")
        return self.candidates[self.index]

    @property
    def attempt(self) -> int:
        """Each candidate gets one attempt, numbered from 1."""
        return self.index + 1


class SubmittedJob(DomainModel):
    batch_job_id: str
    job_queue: str
    job_definition: str
    attempt: int
    instance_type: str
    capacity: CapacityType
    region: str | None = Field(default=None, description="The capacity region of its queue (None: the home region)")


class SelectInput(DomainModel):
    job_id: str
    request: JobRequest


class EnsureQueueInput(DomainModel):
    job_id: str
    request: JobRequest
    selection: Selection
    previous: dict[str, Any] | None = None
    timeouts: Timeouts | None = None

    @property
    def provision_timeout_seconds(self) -> int:
        return self.timeouts.provision_timeout_seconds if self.timeouts else DEFAULT_PROVISION_TIMEOUT_SECONDS


class SubmitInput(DomainModel):
    job_id: str
    request: JobRequest
    selection: Selection
    queue: QueueStatus
    budgeted: bool = False
    team_gpus: str | None = None
    share: str | None = None


class WaitInput(DomainModel):
    job_id: str
    phase: WaitPhase
    attempt: int
    batch_job_id: str
    task_token: str
    timeout_seconds: int | None = Field(default=None, description="The task's timeout: when the workflow acts")
    selection: Selection | None = Field(default=None, description="The candidates: what it falls back to next")

    def next_candidate(self) -> NextCandidate | None:
        """The offering the job would try after this attempt, if any."""
        selection = self.selection
        if selection is None or selection.index + 1 >= len(selection.candidates):
            return None
        candidate = selection.candidates[selection.index + 1]
        return NextCandidate(
            instance_type=candidate.instance_type, capacity=candidate.capacity, region=candidate.region
        )


class WaitResult(DomainModel):
    """What a resumed wait hands to the next state: the attempt's Batch status and times."""

    status: BatchStatus
    at: str | None = None
    exit_code: int | None = None
    started_at: str | None = None
    stopped_at: str | None = None
    status_reason: str | None = None
    runtime_seconds: float | None = Field(default=None, description="Summed over Batch's own attempts")
    verdict: DiagnosisCategory | None = Field(
        default=None, description="Start wait: Batch said why the job cannot start, and another GPU type cures it"
    )
    reclaimed: bool = Field(default=False, description="Finish wait: a spot attempt whose host EC2 took back")

    def billed_seconds(self) -> float:
        """Seconds to bill: every Batch attempt when known, else startedAt to stoppedAt, else 0."""
        if self.runtime_seconds is not None:
            return self.runtime_seconds
        if self.started_at and self.stopped_at:
            return seconds_between(self.started_at, self.stopped_at)
        return 0.0


class RecordCostInput(DomainModel):
    job_id: str
    batch_job: SubmittedJob
    finished: WaitResult


class DiagnoseInput(DomainModel):
    job_id: str
    request: JobRequest
    selection: Selection
    queue: QueueStatus
    batch_job: SubmittedJob
    previous: dict[str, Any] | None = None


DiagnoseOutput = DiagnosisOutcome


class RecordFailureInput(DomainModel):
    job_id: str
    state: dict[str, Any]
