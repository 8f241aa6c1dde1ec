"""What the HTTP API answers: the public shapes of jobs, plans, health and costs (docs/openapi.json)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from functions.shared.domain.capacity.offers import Candidate, Rejected
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.vocabulary import AttemptStatus, BilledCapacity, CapacityType, JobStatus
from functions.shared.domain.cost.attempts import Cost, billed, capacity_type
from functions.shared.domain.cost.reclaims import JobCost
from functions.shared.domain.diagnosis.runnable import Diagnosis
from functions.shared.domain.jobs.costs import job_cost
from functions.shared.domain.jobs.current import (
    billed_now,
    current_attempt,
    current_number,
    outcome_entry,
    shown_status,
)
from functions.shared.domain.jobs.next_action import NextAction, next_action
from functions.shared.domain.jobs.records import HOST_NOTE, JobRecord, TimelineEntry
from functions.shared.domain.jobs.retries import BatchRetry
from functions.shared.domain.requests.job_request import JobRequest

AGENT_FIELDS = {"host", "interruption_notice_at", "rebalance_recommended_at", "checkpoint_uploaded_at", "resumed_from",
                "progress_lost_seconds", "gpu_utilization", "image_pull_seconds", "warning"}  # fmt: skip


class Retried(BatchRetry):
    """One of Batch's attempts of the attempt that ended and was run again."""

    quarantined_at: str | None = Field(
        default=None, description="When GPU Pilot quarantined the host it ran on, if it did (the timeline notes it)"
    )


class Attempt(DomainModel):
    instance_type: str
    capacity: CapacityType
    capacity_type: BilledCapacity = Field(
        description="How it is billed: its capacity, or the reservation it ran in (reserved: an ODCR; capacity-block)"
    )
    region: str | None = Field(default=None, description="The capacity region it ran in (null: the home region)")
    job_queue: str
    batch_job_id: str
    status: AttemptStatus
    status_reason: str | None = None
    exit_code: int | None = None
    container_reason: str | None = Field(default=None, description="Batch's reason for the container's end")
    diagnosis: Diagnosis | None = None
    cost: Cost | None = Field(
        default=None,
        description="What the attempt cost, once it ended (0 if it never ran), and what it added to the bill",
    )
    host_terminations: list[str] = Field(
        default_factory=list,
        description="Batch's words for each of its Batch attempts whose host was terminated (a spot reclaim)",
    )
    batch_retries: list[Retried] = Field(
        default_factory=list,
        description="Batch's attempts of its Batch job that ended and that Batch ran again (a host that failed it, a "
        "spot reclaim), oldest first: where each ran and why it ended",
    )
    reservation: str | None = Field(default=None, description="The Capacity Reservation or Block (cr-...) it ran in")
    log_stream: str | None = Field(
        default=None, description="Its CloudWatch Logs stream (GET /jobs/{job_id}/logs), once Batch ran it"
    )
    # What the host agent reported of it (docs/host-agent.md).
    host: str | None = Field(default=None, description="The EC2 instance it ran on, as its host agent reported")
    interruption_notice_at: str | None = Field(default=None, description="When EC2 gave the spot interruption notice")
    rebalance_recommended_at: str | None = Field(default=None, description="When EC2 recommended a rebalance")
    checkpoint_uploaded_at: str | None = None
    resumed_from: dict[str, Any] | None = Field(default=None, description="The checkpoint it started from")
    progress_lost_seconds: float | None = Field(default=None, description="Work the reclaim took, since its checkpoint")
    gpu_utilization: dict[str, Any] | None = Field(
        default=None, description="{mean, p95, max_memory_gib, idle_seconds, samples}: percent, GiB, seconds"
    )
    image_pull_seconds: float | None = None
    warning: str | None = Field(default=None, description="GPU_IDLE: its GPUs idled past the job's idle_policy")


class JobView(DomainModel):
    """Body of `GET /jobs/{job_id}`."""

    job_id: str
    name: str
    status: JobStatus = Field(
        description="Where the job is, never behind the attempt it is on (an attempt Batch ended shows the job's "
        "outcome, or SELECTING while the workflow moves on from it)"
    )
    request: JobRequest
    attempt: int | None = Field(
        default=None,
        description="The attempt the job is on, from 1 (the summary fields describe it): its latest, or its next "
        "one while that one's pool is provisioned (not in attempts yet)",
    )
    instance_type: str | None = Field(default=None, description="The GPU type of the attempt it is on")
    gpu_model: str | None = None
    capacity_type: BilledCapacity | None = Field(default=None, description="How the attempt it is on is billed")
    region: str | None = Field(default=None, description="The capacity region of the attempt it is on")
    attempts: list[Attempt] = Field(default_factory=list)
    cost: JobCost | None = Field(
        default=None, description="The sum of its attempts' costs, and what its reclaims took and resuming saved"
    )
    timeline: list[TimelineEntry] = Field(default_factory=list)
    execution_arn: str | None = None
    error: str | None = None
    reason: str | None = Field(
        default=None, description="Why the job waits now: the last diagnosis, else Batch's own words (unfinished jobs)"
    )
    owner: str | None = Field(default=None, description="The IAM principal who submitted it")
    team: str | None = Field(default=None, description="The team it belongs to")
    explanation: Diagnosis | None = Field(default=None, description="A diagnosis made now (?explain=true)")
    next_action: NextAction | None = Field(
        default=None, description="While it waits to start: what the workflow does next, and when, unless it starts"
    )
    created_at: str
    updated_at: str


class JobList(DomainModel):
    jobs: list[JobView]
    next_token: str | None = None


class SubmitResponse(DomainModel):
    job_id: str
    status: JobStatus
    execution_arn: str
    warnings: list[str] = Field(default_factory=list, description="What may keep the job waiting (see /plan)")
    instance_type: str | None = Field(default=None, description="Its first choice (the plan's first candidate)")
    region: str | None = Field(default=None, description="The capacity region of its first choice")
    candidates: list[Candidate] = Field(
        default_factory=list,
        description="The plan it was submitted with: its first choice, then the fallbacks the workflow may try, in "
        "order (as POST /plan ranks them)",
    )
    already_submitted: bool = Field(
        default=False,
        description="true: this Idempotency-Key and body were submitted before; this is that job, nothing new started",
    )


class ErrorBody(DomainModel):
    error: str
    field: str | None = None
    message: str
    rejected: list[Rejected] | None = Field(
        default=None,
        description="NoCandidate only (absent from every other error): every GPU offering left out, with its reason "
        "(as /plan)",
    )

    def wire_json(self) -> str:
        """The body as the API sends it: `error`, `field` and `message` always, `rejected` only where it is set (a
        NoCandidate), so that every other error has the keys of the router's and API Gateway's own."""
        return self.model_dump_json(exclude=None if self.rejected is not None else {"rejected"})


def ordered_timeline(entries: list[TimelineEntry]) -> list[TimelineEntry]:
    """The timeline in status order (as stored: a status is appended only when it moves the job on).

    Batch event times are whole seconds, so a status can read earlier than the one before it; no status
    happens before its predecessor, so each time is shown as at least the previous one.
    """
    timeline: list[TimelineEntry] = []
    for entry in entries:
        at = max(entry.at, timeline[-1].at) if timeline else entry.at
        timeline.append(entry.model_copy(update={"at": at}))
    return timeline


def current_reason(record: JobRecord, status: JobStatus) -> str | None:
    """Why an unfinished job waits: the reservation it waits to begin, else the last diagnosis of the attempt it is
    on, else Batch's statusReason; while the pool of its next attempt is provisioned, what its timeline says of that
    (the fallback, never the reason of the attempt it left)."""
    waiting = record.waiting_for_reservation()
    if waiting is not None:
        return waiting.reason
    if status.finished or not record.attempts:
        return None
    attempt = current_attempt(record)
    if attempt is None:
        steps = [entry for entry in record.timeline if not entry.note]
        return steps[-1].reason if steps and steps[-1].status == record.status else None
    if attempt.diagnosis is not None:
        return f"{attempt.diagnosis.category.value}: {attempt.diagnosis.reason}"
    return attempt.status_reason


def retried(retries: list[BatchRetry], timeline: list[TimelineEntry]) -> list[Retried]:
    """Each retry, with when GPU Pilot quarantined the host it ran on (a note on the job's timeline), if it did."""
    quarantined: dict[str, str] = {}
    for entry in timeline:
        found = HOST_NOTE.match(entry.reason or "") if entry.note else None
        if found:
            quarantined.setdefault(found["instance"], entry.at)
    return [Retried(**r.model_dump(), quarantined_at=quarantined.get(r.host or "")) for r in retries]


def job_view(record: JobRecord) -> JobView:
    """The public shape of a job record: its status as the attempt it is on stands (and, for an outcome the workflow
    has yet to record, the timeline entry and error it will record)."""
    status = shown_status(record)
    ahead = outcome_entry(record, status)
    timeline = [*record.timeline, ahead] if ahead is not None else record.timeline
    error = ahead.reason if ahead is not None and status == JobStatus.FAILED else record.error
    return JobView(
        job_id=record.job_id,
        name=record.name,
        status=status,
        request=record.request,
        attempt=current_number(record),
        instance_type=record.instance_type,
        gpu_model=record.gpu_model,
        capacity_type=billed_now(record),
        region=record.region,
        attempts=[
            Attempt(
                instance_type=attempt.instance_type,
                capacity=attempt.capacity,
                capacity_type=capacity_type(attempt.capacity, attempt.reservation, attempt.reserved),
                region=attempt.region,
                job_queue=attempt.job_queue,
                batch_job_id=attempt.batch_job_id or "",
                status=attempt.status,
                status_reason=attempt.status_reason,
                exit_code=attempt.exit_code,
                container_reason=attempt.container_reason,
                diagnosis=attempt.diagnosis,
                cost=billed(attempt.cost, attempt.reservation) if attempt.cost else None,
                host_terminations=attempt.host_terminations,
                batch_retries=retried(attempt.batch_retries, record.timeline),
                reservation=attempt.reservation,
                log_stream=attempt.log_stream,
                **attempt.model_dump(include=AGENT_FIELDS),
            )
            for _, attempt in record.ordered_attempts()
        ],
        cost=job_cost(record),
        timeline=ordered_timeline(timeline),
        execution_arn=record.execution_arn,
        error=error,
        reason=current_reason(record, status),
        next_action=next_action(record),
        owner=record.owner,
        team=record.team,
        created_at=record.created_at,
        updated_at=record.updated_at,
    )
