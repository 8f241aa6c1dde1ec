"""A reserved candidate's attempt before its pool exists: waiting for its reservation to begin (a Capacity Block bought
for later, a future-dated reservation), or giving it up when the reservation has ended.

The workflow waits in one Wait state until the reservation's start (`wait_until`, whole seconds), never polling:
control-plane cost does not grow with the wait. EC2 may show a reservation active minutes after its start: then the
pool is checked again every queue poll. The wait is on the job's record (`reservation_wait`), so status and
`?explain=true` say it.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

from functions.shared.domain.capacity.offers import Candidate
from functions.shared.domain.core.clock import now_iso, parse_iso
from functions.shared.domain.core.vocabulary import DiagnosisCategory, JobStatus
from functions.shared.domain.diagnosis.runnable import Diagnosis
from functions.shared.domain.fleet.batch import RETRY_ATTEMPTS
from functions.shared.domain.jobs.current import moving_to
from functions.shared.domain.jobs.steps import EnsureQueueInput
from functions.shared.domain.pools.specs import QueueStatus, pool_for
from functions.shared.domain.reservations.reservation import (
    SCHEDULED,
    Reservation,
    ReservationWait,
    fit_problem,
    moment,
    waiting_words,
)
from functions.shared.ports import Ports


def wait_for_reservation(
    payload: EnsureQueueInput, candidate: Candidate, live: Reservation, ports: Ports
) -> QueueStatus:
    """The job PROVISIONING, waiting for `live` (scheduled) to begin: the reason on its record and timeline, and the
    time the workflow waits until."""
    at = now_iso()
    starts = live.starts_at or (candidate.reserved.starts_at if candidate.reserved else None) or at
    until = max(parse_iso(starts).timestamp(), parse_iso(at).timestamp() + ports.settings.queue_poll_seconds)
    reason = waiting_words(live)
    number = payload.selection.attempt
    waited = ReservationWait(attempt=number, reservation=live.reservation_id, starts_at=starts, reason=reason)
    ports.jobs.advance(
        payload.job_id,
        JobStatus.PROVISIONING,
        attempt=number,
        fields=moving_to(candidate) | {"reservation_wait": waited},
        reason=reason,
    )
    name = pool_for(candidate, payload.request.arch, ports.settings.resource_prefix).name
    return QueueStatus(
        job_queue=name,
        compute_environment=name,
        ready=False,
        checks=0,
        status=f"RESERVATION/{SCHEDULED}",
        status_reason=reason,
        # Step Functions' Wait takes an RFC 3339 time: whole seconds, the next one, never a moment early.
        wait_until=datetime.fromtimestamp(math.ceil(until), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


def reservation_over(planned: Reservation, live: Reservation | None) -> Diagnosis:
    """Why no instance can launch in the reservation any more: EC2 no longer has it, or it has ended."""
    state = live.state if live is not None else "gone"
    said = "EC2 no longer describes it" if live is None else f"it is {state}"
    ended = f" (it ended at {moment(planned.ends_at)})" if planned.ends_at else ""
    return Diagnosis(
        category=DiagnosisCategory.INSUFFICIENT_CAPACITY,
        reason=f"{planned.kind} {planned.reservation_id}: {said}{ended}, so no instance can launch in it",
        evidence={"reservation": planned.reservation_id, "state": state, "ends_at": planned.ends_at},
        recommendation="GPU Pilot moves on to the job's next candidate, if it has one (reservation_fallback lets a job "
        "that asked for reserved capacity go on to on-demand offerings).",
    )


def block_too_short(live: Reservation, timeout_minutes: int) -> Diagnosis | None:
    """Why the job can no longer finish on the Capacity Block it reached (its earlier candidates took the time the plan
    counted on), or None while it still fits: the plan's fit (every try Batch may make), asked again when the attempt
    begins."""
    problem = fit_problem(live, timeout_minutes, RETRY_ATTEMPTS, now_iso())
    if problem is None:
        return None
    return Diagnosis(
        category=DiagnosisCategory.INSUFFICIENT_CAPACITY,
        reason=f"{problem}: the time left on it when this attempt began",
        evidence={"reservation": live.reservation_id, "state": live.state, "ends_at": live.ends_at},
        recommendation="GPU Pilot moves on to the job's next candidate, if it has one (reservation_fallback lets a job "
        "that asked for reserved capacity go on to on-demand offerings); a shorter timeout_minutes would fit what is "
        "left of the block.",
    )


def waiting_diagnosis(wait: ReservationWait, fallback: bool) -> Diagnosis:
    """What `?explain=true` says of a job waiting for its reservation to begin: nothing is wrong, it starts then."""
    after = (
        "if the job cannot run there, reservation_fallback sends it on to on-demand offerings"
        if fallback
        else "the job runs only there (reservation_fallback is off)"
    )
    return Diagnosis(
        category=DiagnosisCategory.WAITING_FOR_RESERVATION,
        reason=wait.reason,
        evidence={"reservation": wait.reservation, "starts_at": wait.starts_at, "attempt": wait.attempt},
        recommendation=f"Nothing to fix: EC2 makes {wait.reservation} active at {moment(wait.starts_at)}, and GPU "
        f"Pilot then creates its pool and submits the job; {after}.",
    )
