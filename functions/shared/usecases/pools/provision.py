"""EnsureJobQueue: create or reuse the pool (compute environment + job queue) for the current candidate.

AWS Batch refuses a job queue whose compute environments are not VALID, and a new compute environment
is CREATING for a while: the queue is created only once its compute environment is VALID, and the
workflow polls (WaitForJobQueue) until both are, until the attempt's deadline (set at its first check,
`provision_timeout_seconds` later); past it the pool is diagnosed POOL_NOT_READY and the workflow falls back.
An INVALID compute environment will not heal by waiting, nor will a DISABLED queue: either is diagnosed, and
the workflow falls back to the next candidate.
The pool is named after the version of its spec (a changed launch template version is a new pool), claimed
before it is used (so that no retirement takes it meanwhile), and a new one is created only under Batch's
limits (the least recently used idle pool is retired to make room; with none, POOL_LIMIT and fall back).
A pool Batch shows DELETING or DELETED (or whose queue it does), or whose retirement has started, is never
reused or waited on: the job gets a new generation of the pool, under a name Batch does not hold.
A reserved candidate's pool is made only once its reservation is active: until a Capacity Block (or a future-dated
reservation) begins, the job waits (WaitForReservation, a Wait state until then: no polling) with the reason saying
so; a reservation that has ended is diagnosed and the workflow falls back (or gives up).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from functions.shared.domain.capacity.offers import Candidate
from functions.shared.domain.core.clock import iso, now_iso, parse_iso
from functions.shared.domain.core.vocabulary import AttemptStatus, DiagnosisCategory, JobStatus, Remedy
from functions.shared.domain.diagnosis.runnable import Diagnosis, disabled_queue, invalid_environment
from functions.shared.domain.fleet.batch import ComputeEnvironmentState, JobQueueState
from functions.shared.domain.jobs.current import moving_to
from functions.shared.domain.jobs.records import AttemptRecord
from functions.shared.domain.jobs.steps import EnsureQueueInput
from functions.shared.domain.pools.queues import job_queue_spec
from functions.shared.domain.pools.retirement import RetireStep, pool_not_ready
from functions.shared.domain.pools.specs import (
    ComputeEnvironmentStatus,
    Generation,
    Pool,
    QueueStatus,
    pool_for,
    pool_generation,
    versioned_pool,
)
from functions.shared.domain.reservations.reservation import ACTIVE, SCHEDULED, Reservation
from functions.shared.ports import Ports
from functions.shared.usecases.capacity.fallback import leave_offering
from functions.shared.usecases.pools.provision_words import provisioning_reason
from functions.shared.usecases.pools.retire import advance_retirement, make_room
from functions.shared.usecases.reservations.wait import block_too_short, reservation_over, wait_for_reservation

# What the Step Functions console shows of a pool that cannot take the job: compute environment/queue.
BROKEN_STATUS = {
    DiagnosisCategory.COMPUTE_ENVIRONMENT_INVALID: f"{ComputeEnvironmentStatus.INVALID}/-",
    DiagnosisCategory.POOL_DISABLED: f"{ComputeEnvironmentStatus.VALID}/DISABLED",
    DiagnosisCategory.POOL_LIMIT: "NOT_CREATED/NOT_CREATED",
}


def ensure_job_queue(payload: EnsureQueueInput, ports: Ports) -> QueueStatus:
    """Create what is missing of the pool, in Batch's order, in the candidate's region; say whether it can take the
    job yet."""
    candidate = payload.selection.current()
    # The pool, and any reservation it runs in, are in the candidate's region.
    ports = ports.in_region(candidate.region)
    if candidate.reservation is not None:
        # Its pool is made once the reservation is active: until it begins, the workflow waits (no polling).
        held = ports.reservations.reservation(candidate.reservation)
        if held is None or held.state not in (ACTIVE, SCHEDULED):
            return _reservation_over(payload, candidate, held, ports)
        too_short = block_too_short(held, payload.request.timeout_minutes)
        if too_short is not None:
            return _reservation_over(payload, candidate, held, ports, too_short)
        if held.state == SCHEDULED:
            return wait_for_reservation(payload, candidate, held, ports)
    base, build = _pool_and_spec(payload, ports)
    wait = _wait(payload)
    environments, queues = ports.pools.generations(base.name)
    live, next_number = pool_generation(base.name, environments, queues)
    retiring: Generation | None = None
    if live is not None and not _claim(build(live.number)[0], ports):
        retiring, live = live, None  # its retirement has started: not the job's pool
    if retiring is not None and retiring.environment is not None and _invalid(retiring.environment):
        # An INVALID pool being retired is left behind, diagnosed on the attempt.
        broken, reason = build(retiring.number)[0].name, retiring.environment.status_reason
        _provisioning(payload, candidate, broken, wait, ports)
        return _broken_pool(payload, broken, invalid_environment(retiring.environment), reason, wait, ports)
    pool, spec = build(live.number if live is not None else next_number)
    _provisioning(payload, candidate, pool.name, wait, ports)
    if retiring is not None:
        # Helped down on the way; the job gets a new generation beside it at once (Batch takes minutes to
        # delete the old one, and keeps its name meanwhile).
        advance_retirement(build(retiring.number)[0].name, ports)
    environment: ComputeEnvironmentState | None = live.environment if live is not None else None
    queue: JobQueueState | None = live.queue if live is not None else None
    if live is None and not _claim(pool, ports):
        # A retirement of this name never finished (its pool vanished first): finish it, then claim.
        step = advance_retirement(pool.name, ports)
        if step != RetireStep.DONE or not _claim(pool, ports):
            return _not_ready(payload, pool.name, wait, f"RETIRING/{step.value}", None, ports)
    if environment is None:
        room = make_room(pool.name, ports)
        if room.diagnosis is not None:
            return _broken_pool(payload, pool.name, room.diagnosis, room.diagnosis.reason, wait, ports)
        if not room.fits:
            return _not_ready(payload, pool.name, wait, room.status, None, ports)
        ports.pools.create_compute_environment(spec)
        environment = ports.pools.describe_compute_environment(pool.name)
    environment_status = (environment.status if environment else None) or ComputeEnvironmentStatus.CREATING
    if environment is not None and _invalid(environment):
        return _broken_pool(
            payload, pool.name, invalid_environment(environment), environment.status_reason, wait, ports
        )
    if environment is not None and environment_status == ComputeEnvironmentStatus.VALID and queue is None:
        ports.pools.create_job_queue(job_queue_spec(pool, environment.arn, ports.settings.fair_share_policy))
        queue = ports.pools.job_queue(pool.name)
    if queue is not None and queue.disabled:
        return _broken_pool(payload, pool.name, disabled_queue(queue), queue.status_reason, wait, ports)
    queue_status = queue.status if queue else None
    ready = environment_status == ComputeEnvironmentStatus.VALID and queue_status == ComputeEnvironmentStatus.VALID
    if ready:
        return QueueStatus(
            job_queue=pool.name, compute_environment=pool.name, ready=True, status="VALID/VALID", **wait.next()
        )
    status = f"{environment_status}/{queue_status or 'NOT_CREATED'}"
    return _not_ready(payload, pool.name, wait, status, environment.status_reason if environment else None, ports)


@dataclass(frozen=True)
class _Wait:
    """How long this attempt has waited for its pool: its checks so far, since when, and until when."""

    attempt: int
    checks: int
    since: str
    deadline: str

    def next(self) -> dict[str, Any]:
        """The QueueStatus fields that carry the wait on to the next check."""
        return {"attempt": self.attempt, "checks": self.checks + 1, "since": self.since, "deadline": self.deadline}


def _wait(payload: EnsureQueueInput) -> _Wait:
    """The attempt's wait so far (from the previous check of the same attempt), or one starting now, whose
    deadline is the provisioning timeout away."""
    attempt = payload.selection.attempt
    previous = payload.previous or {}
    if previous.get("attempt") == attempt and previous.get("since") and previous.get("deadline"):
        return _Wait(attempt, int(previous.get("checks", 0)), previous["since"], previous["deadline"])
    since = now_iso()
    return _Wait(attempt, 0, since, iso(parse_iso(since) + timedelta(seconds=payload.provision_timeout_seconds)))


def _reservation_over(
    payload: EnsureQueueInput,
    candidate: Candidate,
    held: Reservation | None,
    ports: Ports,
    diagnosis: Diagnosis | None = None,
) -> QueueStatus:
    """The reserved candidate's attempt diagnosed (its reservation ended, EC2 no longer has it, or too little of a
    block is left for the job), and fall back."""
    assert candidate.reserved is not None
    name, wait = pool_for(candidate, payload.request.arch, ports.settings.resource_prefix).name, _wait(payload)
    _provisioning(payload, candidate, name, wait, ports)
    diagnosis = diagnosis or reservation_over(candidate.reserved, held)
    status = f"RESERVATION/{diagnosis.evidence['state']}"
    return _broken_pool(payload, name, diagnosis, diagnosis.reason, wait, ports, status=status)


def _pool_and_spec(
    payload: EnsureQueueInput, ports: Ports
) -> tuple[Pool, Callable[[int], tuple[Pool, dict[str, Any]]]]:
    """The candidate's pool, named after the version of its spec as it would be built now, and how to build
    each generation of it (its name and `CreateComputeEnvironment` arguments). A reservation's pool is built on the
    launch template that targets it (made from the stack's latest version)."""
    settings = ports.settings
    candidate = payload.selection.current()
    base = pool_for(candidate, payload.request.arch, settings.resource_prefix, payload.request.zones)
    subnets = ports.availability.subnets_in(base.zones) if base.zones else None
    template = settings.launch_template_name
    version = ports.availability.launch_template_version(template) if template else None
    if candidate.reserved is not None and template and version:
        template, version = ports.reservations.launch_template(template, version, candidate.reserved), 1
        base = base.model_copy(update={"launch_template": template})

    def build(generation: int) -> tuple[Pool, dict[str, Any]]:
        return versioned_pool(base, settings, subnets, version, generation)

    return build(1)[0], build


def _claim(pool: Pool, ports: Ports) -> bool:
    return ports.pool_states.claim_pool(pool.name, pool.key, now_iso())


def _invalid(environment: ComputeEnvironmentState) -> bool:
    return environment.status == ComputeEnvironmentStatus.INVALID


def _provisioning(payload: EnsureQueueInput, candidate: Candidate, pool: str, wait: _Wait, ports: Ports) -> None:
    """The job is PROVISIONING this attempt's pool; its first check says why on the timeline."""
    ports.jobs.advance(
        payload.job_id,
        JobStatus.PROVISIONING,
        attempt=payload.selection.attempt,
        fields=moving_to(candidate),
        reason=provisioning_reason(payload, candidate, pool, ports) if wait.checks == 0 else None,
    )


def _not_ready(
    payload: EnsureQueueInput, pool: str, wait: _Wait, status: str, status_reason: str | None, ports: Ports
) -> QueueStatus:
    """Not ready yet: the workflow waits and asks again, until the attempt's deadline; past it, the pool is
    diagnosed POOL_NOT_READY on the attempt and the workflow falls back."""
    at = now_iso()
    if at >= wait.deadline:
        diagnosis = pool_not_ready(pool, status, status_reason, wait.since, wait.deadline, at)
        return _broken_pool(payload, pool, diagnosis, status_reason, wait, ports, status=status)
    return QueueStatus(
        job_queue=pool, compute_environment=pool, ready=False, status=status, status_reason=status_reason, **wait.next()
    )


def _broken_pool(
    payload: EnsureQueueInput,
    pool: str,
    diagnosis: Diagnosis,
    status_reason: str | None,
    wait: _Wait,
    ports: Ports,
    status: str | None = None,
) -> QueueStatus:
    """Record the pool that cannot take the job (INVALID compute environment, DISABLED queue, no room, not ready
    in time) on this candidate's attempt, nothing submitted to it, remember its offering as unavailable, and
    fall back."""
    selection = payload.selection
    candidate = selection.current()
    attempt = AttemptRecord.of(
        candidate, pool, AttemptStatus.NOT_SUBMITTED, status_reason=status_reason, diagnosis=diagnosis
    )
    ports.jobs.put_attempt(payload.job_id, selection.attempt, attempt)
    leave_offering(candidate, diagnosis, ports)
    last = selection.index + 1 >= len(selection.candidates)
    return QueueStatus(
        job_queue=pool,
        compute_environment=pool,
        ready=False,
        status=status or BROKEN_STATUS[diagnosis.category],
        status_reason=status_reason,
        remedy=Remedy.GIVE_UP if last else Remedy.FALL_BACK,
        next_index=selection.index if last else selection.index + 1,
        diagnosis=diagnosis,
        **wait.next(),
    )
