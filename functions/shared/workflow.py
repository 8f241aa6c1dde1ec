"""Payloads that the GpuJob state machine passes to and from its Lambdas."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from functions.shared.batch_jobs import SubmittedJob
from functions.shared.models import Candidate, Diagnosis, JobRequest
from functions.shared.provisioning import QueueStatus


class NoGpuTypeAvailable(Exception):
    """No GPU offering fits the request (or all fallbacks are spent)."""


class Selection(BaseModel):
    candidates: list[Candidate]
    index: int = 0
    catalog: str = Field(default="snapshot", description="Where the GPU catalog came from: live or snapshot")

    def current(self) -> Candidate:
        if self.index >= len(self.candidates):
            raise NoGpuTypeAvailable(f"all {len(self.candidates)} GPU offerings were tried")
        return self.candidates[self.index]

    @property
    def attempt(self) -> int:
        """Each candidate gets one attempt, numbered from 1."""
        return self.index + 1


class SelectInput(BaseModel):
    job_id: str
    request: JobRequest


class EnsureQueueInput(BaseModel):
    job_id: str
    request: JobRequest
    selection: Selection
    previous: dict[str, Any] | None = None


class SubmitInput(BaseModel):
    job_id: str
    request: JobRequest
    selection: Selection
    queue: QueueStatus


class WaitInput(BaseModel):
    job_id: str
    phase: Literal["start", "finish"]
    attempt: int
    batch_job_id: str
    task_token: str


class WaitResult(BaseModel):
    """What a resumed wait hands to the next state: the attempt's Batch status and times."""

    status: str
    at: str | None = None
    exit_code: int | None = None
    started_at: int | None = Field(default=None, description="Batch startedAt, epoch ms")
    stopped_at: int | None = Field(default=None, description="Batch stoppedAt, epoch ms")
    status_reason: str | None = None
    runtime_seconds: float | None = Field(default=None, description="Summed over Batch's own attempts")

    def billed_seconds(self) -> float:
        """Seconds to bill: every Batch attempt when known, else startedAt to stoppedAt, else 0."""
        if self.runtime_seconds is not None:
            return self.runtime_seconds
        if self.started_at is not None and self.stopped_at is not None:
            return max(0.0, (self.stopped_at - self.started_at) / 1000)
        return 0.0


class RecordCostInput(BaseModel):
    job_id: str
    batch_job: SubmittedJob
    finished: WaitResult


class DiagnoseInput(BaseModel):
    job_id: str
    request: JobRequest
    selection: Selection
    queue: QueueStatus
    batch_job: SubmittedJob
    previous: dict[str, Any] | None = None


class DiagnoseOutput(Diagnosis):
    action: Literal["fall_back", "keep_waiting", "give_up"]
    next_index: int
    checks: int


class RecordFailureInput(BaseModel):
    job_id: str
    state: dict[str, Any]
