"""Which of the account's reservations (Capacity Reservations, Capacity Blocks) can run a request, and why the
others cannot. Pure rules of the planning walk (planning.py): its offerings step (offerings.py) offers them first,
and the ranking (ranking.py) tries them first.

A reservation is used for an on-demand job when it is active, `open`, has room, reserves Linux/UNIX instances of
default tenancy (what GPU Pilot launches), is in one of the deployment's zones and, for a Capacity Block, every try
Batch may make of the job fits before EC2 takes its instances back; a `targeted` one, or one that
has not begun (a Capacity Block bought for later), only when the request names it (`reservation`) or asks for
reserved capacity (`capacity: reserved`): then the job waits for it to begin.
"""

from __future__ import annotations

from typing import NamedTuple

from functions.shared.domain.capacity.catalog import GpuType
from functions.shared.domain.capacity.fit import fit_problem, type_problem
from functions.shared.domain.capacity.market import Signals
from functions.shared.domain.capacity.offers import Candidate
from functions.shared.domain.core.clock import seconds_between
from functions.shared.domain.core.money import PriceQuote
from functions.shared.domain.core.vocabulary import CapacityPreference, CapacityType
from functions.shared.domain.fleet.batch import RETRY_ATTEMPTS
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.domain.reservations.reservation import (
    ACTIVE,
    SCHEDULED,
    TARGETED,
    Reservation,
    hourly_rate,
    moment,
)
from functions.shared.domain.reservations.reservation import fit_problem as block_fit_problem


class Refused(NamedTuple):
    """A reservation that cannot run the request: its type, why, and the request field at fault (if one is)."""

    instance_type: str
    reason: str
    field: str | None


def reserved_options(request: JobRequest, signals: Signals) -> tuple[list[Candidate], list[Refused]]:
    """The account's reservations that can run the request (in the order to try them), and why the others cannot:
    every one considered when the request asks for reserved capacity; otherwise those of a type that fits it (what
    it could have asked for)."""
    options: list[Candidate] = []
    refused: list[Refused] = []
    if request.capacity == CapacityPreference.SPOT and not request.asks_reserved:
        return options, refused  # spot only: a reservation's instances are on-demand ones
    deployed = signals.availability.zones
    for reservation in sorted(signals.reservations, key=_reservation_order):
        if request.reservation is not None and reservation.reservation_id != request.reservation:
            continue
        named = f"{reservation.kind} {reservation.reservation_id}"
        gpu = signals.catalog.get(reservation.instance_type)
        problem = (
            type_problem(request, gpu, signals.arm64_ami, signals.market.max_vcpus)
            if gpu is not None
            else (None, "not an NVIDIA GPU type GPU Pilot knows")
        )
        if problem is None:
            problem = _reservation_problem(request, reservation, deployed, signals.now)
        if problem is not None and (request.asks_reserved or (gpu is not None and fit_problem(request, gpu) is None)):
            field, why = problem
            refused.append(Refused(reservation.instance_type, f"{named}: {why}", field))
        if problem is None and gpu is not None:
            rate = hourly_rate(reservation, signals.on_demand.get(reservation.instance_type))
            options.append(_reserved_candidate(gpu, reservation, rate, signals.region))
    return options, refused


def _reservation_order(reservation: Reservation) -> tuple[object, ...]:
    """Active before scheduled; then the soonest usable end first (a block's unused hours are lost), the freest."""
    until = reservation.usable_until() or reservation.ends_at or "9999"
    return reservation.state != ACTIVE, reservation.starts_at or "", until, -reservation.available


def _reservation_problem(
    request: JobRequest, reservation: Reservation, deployed: list[str], at: str
) -> tuple[str | None, str] | None:
    """Why the reservation cannot take the request now (the request field at fault, if one is), or None."""
    asked = request.asks_reserved
    which = "reservation" if request.reservation else "capacity" if asked else "reservation"
    never = reservation.launch_problem()
    if never is not None:
        return which, never
    if reservation.match == TARGETED and not asked:
        return "reservation", (
            "targeted: GPU Pilot uses it only for a request that names it (reservation) or asks capacity: reserved"
        )
    if reservation.state == SCHEDULED and reservation.starts_at:
        if not asked:
            return "reservation", (
                f"begins at {moment(reservation.starts_at)}: a request waits for it only when it names it "
                "(reservation) or asks capacity: reserved"
            )
        limit = request.give_up_after_minutes
        if limit is not None and at and seconds_between(at, reservation.starts_at) > limit * 60:
            return "give_up_after_minutes", (
                f"begins at {moment(reservation.starts_at)}, after give_up_after_minutes {limit:g} would end the wait"
            )
    elif reservation.state != ACTIVE:
        return which, f"{reservation.state}: no instance can launch in it"
    elif reservation.available <= 0:
        return which, f"full: {reservation.total} of {reservation.total} instances in use"
    if reservation.zone not in deployed:
        zones = ", ".join(deployed)
        return "reservation", f"in {reservation.zone}, where this deployment has no subnet (zones: {zones})"
    if request.zones and reservation.zone not in request.zones:
        return "zones", f"in {reservation.zone}, not among the request's zones"
    # A reserved attempt is on-demand: Batch may run it RETRY_ATTEMPTS times, each up to its timeout.
    too_long = block_fit_problem(reservation, request.timeout_minutes, RETRY_ATTEMPTS, at) if at else None
    return ("timeout_minutes", too_long) if too_long else None


def _reserved_candidate(
    gpu: GpuType, reservation: Reservation, rate: PriceQuote | None, region: str | None
) -> Candidate:
    """The reservation as a candidate: on-demand instances in its zone of the signals' region, at the reservation's
    rate, adding nothing to the bill (money.reserved_rate)."""
    return Candidate(
        instance_type=gpu.instance_type,
        gpu_model=gpu.gpu_model,
        gpus=gpu.gpus,
        gpu_memory_gib=gpu.gpu_memory_gib,
        vcpus=gpu.vcpus,
        memory_gib=gpu.memory_gib,
        capacity=CapacityType.ON_DEMAND,
        hourly_usd=rate.hourly_usd if rate else None,
        marginal_hourly_usd=0.0,
        pricing=rate.pricing if rate else f"{reservation.kind} {reservation.reservation_id}: no known rate",
        zones=[reservation.zone],
        region=region,
        score=0.0,
        reservation=reservation.reservation_id,
        reserved=reservation,
    )
