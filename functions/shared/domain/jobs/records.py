"""The job record, typed: one job, its attempts, its parked waits and its timeline.

The DynamoDB item is this model's JSON form (adapters/dynamodb_codec.py turns it into attribute values),
so every reader goes through these types rather than string keys.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field

from functions.shared.domain.capacity.offers import Candidate
from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.vocabulary import (
    AttemptStatus,
    BatchStatus,
    BilledCapacity,
    CapacityType,
    JobStatus,
    Remedy,
    WaitPhase,
)
from functions.shared.domain.cost.attempts import Cost
from functions.shared.domain.cost.idle import IdleWarning
from functions.shared.domain.diagnosis.runnable import Diagnosis
from functions.shared.domain.jobs.lifecycle import status_rank
from functions.shared.domain.jobs.retries import BatchRetry
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.domain.reservations.reservation import Reservation, ReservationWait
from functions.shared.domain.teams.commitment import Commitment

# A timeline note: something that happened to the job without changing its status (its host quarantined).
HOST_NOTE = re.compile(r"^host (?P<instance>\S+) quarantined: ")
# EC2's word on a spot host (jobs/ec2_events.py): a note, never a quarantine.
EC2_NOTE = re.compile(r"^host (?P<instance>\S+) (spot interruption warning|rebalance recommendation): ")


class TimelineEntry(DomainModel):
    status: JobStatus
    at: str
    reason: str | None = None
    reason_at: str | None = Field(
        default=None, description="When the reason was learnt, when later than `at` (Batch's words: its event's time)"
    )

    @property
    def note(self) -> bool:
        """Appended without a status change: the status it carries is the job's at the time."""
        return bool(self.reason and (HOST_NOTE.match(self.reason) or EC2_NOTE.match(self.reason)))


class NextCandidate(DomainModel):
    """The offering a job falls back to next, by name."""

    instance_type: str
    capacity: CapacityType
    region: str | None = None


class Wait(DomainModel):
    """A workflow parked on an attempt: its task token, sent when the attempt's Batch status satisfies it (or, for
    the start, when Batch gives a verdict another GPU type cures), and until when it waits."""

    attempt: int
    token: str
    since: str | None = Field(default=None, description="When the workflow parked (ISO)")
    timeout_seconds: int | None = Field(default=None, description="The workflow acts (diagnoses, gives up) after this")
    next_candidate: NextCandidate | None = Field(default=None, description="The next offering to try, if any")


class DiagnosisOutcome(Diagnosis):
    """A diagnosis and what the workflow does about it (DiagnoseStuckJob's answer)."""

    remedy: Remedy
    next_index: int
    checks: int


class AttemptRecord(DomainModel):
    """One attempt: one GPU offering tried for the job, and the Batch job (if any) that ran it."""

    instance_type: str
    gpu_model: str = ""
    instance_gpus: int = 1
    capacity: CapacityType
    zones: list[str] = Field(default_factory=list)
    region: str | None = Field(default=None, description="The capacity region it ran in (None: the home region)")
    job_queue: str
    status: AttemptStatus = AttemptStatus.SUBMITTED
    submitted_at: str | None = None
    batch_job_id: str | None = None
    job_definition: str | None = None
    batch_status: BatchStatus | None = None
    batch_rank: int | None = None
    batch_status_at: str | None = None
    status_reason: str | None = None
    started_at: str | None = None
    stopped_at: str | None = None
    exit_code: int | None = None
    container_reason: str | None = Field(default=None, description="Batch's reason for the container's end")
    container_instance_arn: str | None = Field(default=None, description="Where it ran: its zone prices spot")
    runtime_seconds: float | None = None
    cost: Cost | None = Field(default=None, description="What the attempt cost, once it ended")
    diagnosis: Diagnosis | None = None
    fell_back: DiagnosisOutcome | None = Field(
        default=None, description="The diagnosis that cancelled this attempt (a retried diagnosis repeats it)"
    )
    host_terminations: list[str] = Field(
        default_factory=list, description="Batch's words for each of its Batch attempts whose host was terminated"
    )
    host_terminated: bool = Field(default=False, description="Its last Batch attempt ended with its host's termination")
    batch_retries: list[BatchRetry] = Field(
        default_factory=list,
        description="Batch's attempts of its Batch job that ended and were run again (oldest first)",
    )
    verdict: str | None = Field(
        default=None, description="Batch's reason that resumed the start wait early (a verdict resumes it once)"
    )
    queue_verdict: str | None = Field(
        default=None, description="Batch's verdict on the job heading its queue, which holds this one too (its words)"
    )
    queue_head: str | None = Field(default=None, description="That job (its Batch job id)")
    reservation: str | None = Field(default=None, description="The Capacity Reservation or Block (cr-...) it ran in")
    # What the host agent saw of it (jobs/agent_reports.py).
    host: str | None = Field(default=None, description="The EC2 instance it runs on, as its host agent reported")
    interruption_notice_at: str | None = None
    rebalance_recommended_at: str | None = None
    checkpoint_uploaded_at: str | None = None
    resumed_from: dict[str, Any] | None = None
    progress_lost_seconds: float | None = None
    gpu_utilization: dict[str, Any] | None = None
    image_pull_seconds: float | None = None
    agent_report_sequence: int | None = Field(default=None, description="The latest agent report it holds")
    warning: str | None = Field(default=None, description="What the job should know of it (GPU_IDLE: ...)")
    idle_warning: IdleWarning | None = Field(default=None, description="Its GPUs idled past the idle_policy (warn)")
    reserved: Reservation | None = Field(default=None, description="That reservation, as the plan saw it: its price")
    log_stream: str | None = Field(
        default=None, description="Its last Batch attempt's CloudWatch Logs stream, named by Batch at RUNNING"
    )

    @classmethod
    def of(cls, candidate: Candidate, job_queue: str, status: AttemptStatus, **fields: Any) -> AttemptRecord:
        """A new attempt of `candidate` in `job_queue`, starting now."""
        return cls(
            instance_type=candidate.instance_type,
            gpu_model=candidate.gpu_model,
            instance_gpus=candidate.gpus,
            capacity=candidate.capacity,
            zones=candidate.zones,
            region=candidate.region,
            job_queue=job_queue,
            status=status,
            submitted_at=now_iso(),
            reservation=candidate.reservation,
            reserved=candidate.reserved,
            **fields,
        )

    @property
    def reclaimed(self) -> bool:
        """A spot attempt that ended because EC2 took its host back (after Batch's retries, if any)."""
        return self.capacity == CapacityType.SPOT and self.batch_status == BatchStatus.FAILED and self.host_terminated

    @property
    def live(self) -> bool:
        """A Batch job exists for it and has not ended."""
        return bool(self.batch_job_id) and not (self.batch_status and self.batch_status.ended)


class Ownership(DomainModel):
    """Whose a new job is: its owner and team, what it commits of the team's budget, the team's GPU cap it draws."""

    owner: str | None = None
    team: str | None = None
    commitment: Commitment | None = None
    team_gpus: str | None = None


class JobRecord(DomainModel):
    job_id: str
    name: str
    status: JobStatus
    status_rank: int = 0
    request: JobRequest
    attempts: dict[int, AttemptRecord] = Field(default_factory=dict)
    waits: dict[WaitPhase, Wait] = Field(default_factory=dict)
    timeline: list[TimelineEntry] = Field(default_factory=list)
    instance_type: str | None = None
    gpu_model: str | None = None
    region: str | None = Field(default=None, description="The capacity region of its latest attempt")
    capacity_type: BilledCapacity | None = Field(
        default=None, description="How the attempt it is on is billed, written as that attempt's pool is provisioned"
    )
    cost: Cost | None = None
    error: str | None = None
    execution_arn: str | None = None
    reservation_wait: ReservationWait | None = Field(
        default=None, description="The reservation the current attempt waits to begin, if it does"
    )
    owner: str | None = Field(default=None, description="The principal who submitted it (null: before teams)")
    team: str | None = Field(default=None, description="The team it belongs to (null: an admin's of no team)")
    commitment: Commitment | None = Field(default=None, description="What it holds of its team's budget")
    team_gpus: str | None = Field(
        default=None, description="The Batch consumable resource of its team's GPU cap, which its attempts draw"
    )
    created_at: str
    updated_at: str

    def attempt(self, number: int) -> AttemptRecord | None:
        return self.attempts.get(number)

    def latest_attempt(self) -> tuple[int, AttemptRecord] | None:
        if not self.attempts:
            return None
        number = max(self.attempts)
        return number, self.attempts[number]

    def ordered_attempts(self) -> list[tuple[int, AttemptRecord]]:
        return sorted(self.attempts.items())

    def waiting_for_reservation(self) -> ReservationWait | None:
        """The reservation wait of the attempt the job is provisioning now (an older attempt's is over)."""
        wait = self.reservation_wait
        if wait is None or self.status != JobStatus.PROVISIONING:
            return None
        return wait if self.status_rank == status_rank(JobStatus.PROVISIONING, wait.attempt) else None

    def entry_for(self, status: JobStatus, attempt: int) -> int | None:
        """The index of the timeline entry that `status` on `attempt` added, while the job is still there: the
        entry that a reason learnt later (Batch's words, a diagnosis) explains. None once the job moved on."""
        if self.status_rank != status_rank(status, attempt) or not self.timeline:
            return None
        last = len(self.timeline) - 1
        while last > 0 and self.timeline[last].note:
            last -= 1  # a note explains nothing of the status before it
        return last if self.timeline[last].status == status and not self.timeline[last].note else None


class ActiveJob(DomainModel):
    """What the sweep reads of an unfinished job (all the index of unfinished jobs projects): its attempts and
    parked waits, its execution, and how long it may wait for a GPU before it is stuck."""

    job_id: str
    attempts: dict[int, AttemptRecord] = Field(default_factory=dict)
    waits: dict[WaitPhase, Wait] = Field(default_factory=dict)
    execution_arn: str | None = None
    stuck_after_minutes: float | None = Field(
        default=None, description="The request's; None on a record written before the index projected it"
    )

    def latest_attempt(self) -> tuple[int, AttemptRecord] | None:
        if not self.attempts:
            return None
        number = max(self.attempts)
        return number, self.attempts[number]
