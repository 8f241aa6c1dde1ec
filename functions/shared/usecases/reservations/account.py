"""GET /reservations, GET /reservations/offerings, POST /reservations/purchase, and the sweep's reservation_idle waste.

What the account holds is listed with what its idle hours cost, and the Capacity Blocks on offer (remembered for an
hour), in every capacity region: a region that cannot be read is left out, saying why, as the plan and the sweep leave
it. One offering is bought, in its region, only when the deployment allows it, the caller confirms, and its fee is
within the caller's limit, as EC2 states it when asked again (for the days it was listed for) just before the
purchase. Never implicitly: nothing else in GPU Pilot buys capacity. The idle hours charged are those of the
reservations GPU Pilot could launch into, each saying whose bill they are on.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar

from functions.shared.domain.core.clock import iso, now_iso, parse_iso
from functions.shared.domain.core.errors import (
    PurchaseDisabled,
    PurchaseInProgress,
    RequestRefused,
    SignalUnavailable,
    aws_failure_words,
)
from functions.shared.domain.core.money import usd_sum
from functions.shared.domain.cost.waste import RESERVATION_IDLE, reservation_idle
from functions.shared.domain.reservations.offerings import BlockOffering
from functions.shared.domain.reservations.reservation import (
    FEE_TAG,
    PURCHASED_BY_TAG,
    RESERVATION_TAG,
    Reservation,
    hourly_rate,
)
from functions.shared.domain.reservations.views import (
    OfferingList,
    PurchaseRequest,
    ReservationList,
    ReservationView,
    reservation_view,
)
from functions.shared.observability import logger
from functions.shared.ports import Ports

# GET /reservations shows the idle hours the sweeps recorded over this many days.
IDLE_WINDOW_DAYS = 30
# The sweep runs every 5 minutes: its first reading of a reservation charges at most that much of its past.
FIRST_SWEEP_SECONDS = 300
T = TypeVar("T")


def list_reservations(ports: Ports) -> ReservationList:
    """The account's reservations in every capacity region (active, scheduled, being paid for), each priced in its
    region, with its idle hours' cost over the last 30 days; a capacity region that cannot be read is left out, with
    AWS's words."""
    day_to = now_iso()[:10]
    day_from = iso(parse_iso(day_to) - timedelta(days=IDLE_WINDOW_DAYS))[:10]
    idle: dict[str, list[float]] = {}
    for entry in ports.waste.waste_between(day_from, day_to):
        if entry.reason == RESERVATION_IDLE:
            idle.setdefault(entry.instance_id, []).append(entry.usd)

    def held(regional: Ports) -> list[ReservationView]:
        found = regional.reservations.reservations()
        return [_view(r, usd_sum(idle.get(r.reservation_id, [])), regional) for r in found]

    views, left_out = _in_every_region(ports, held)
    views.sort(key=lambda v: (v.state != "active", v.starts_at or "", v.reservation_id))
    return ReservationList(reservations=views, idle_usd=usd_sum(v.idle_usd for v in views), left_out=left_out)


def _in_every_region(ports: Ports, read: Callable[[Ports], list[T]]) -> tuple[list[T], dict[str, str]]:
    """What `read` answers in each capacity region, and each region it could not read in (its stack not deployed, the
    region not enabled, EC2 refusing or throttling past the retries), with AWS's words. Home's failure is raised: it
    holds the deployment."""
    found: list[T] = []
    left_out: dict[str, str] = {}
    for region in ports.settings.regions:
        try:
            found += read(ports.in_region(region))
        except RequestRefused:
            raise
        except Exception as error:
            if region == ports.settings.home:
                raise
            # A signal AWS would not give names its call already; any other failure, AWS's code and words.
            words = str(error) if isinstance(error, SignalUnavailable) else aws_failure_words(error)
            left_out[region] = f"could not be read ({words})"
    return found, left_out


def _view(reservation: Reservation, idle_usd: float, ports: Ports) -> ReservationView:
    """The reservation as `ports`' region holds and prices it."""
    rate = hourly_rate(reservation, ports.prices.on_demand(reservation.instance_type))
    return reservation_view(reservation, rate, idle_usd, ports.settings.region)


def block_offerings(instance_type: str, count: int, days: int, ports: Ports) -> OfferingList:
    """The Capacity Blocks of `count` instance_type instances for `days` EC2 offers now in every capacity region that
    sells the type (a region that cannot be read is left out, saying why); remembered for an hour, so that one of them
    may be bought, in its region, by its id."""
    sold: list[str] = []

    def offered(regional: Ports) -> list[BlockOffering]:
        if instance_type not in regional.catalog.gpu_types():
            return []  # EC2 does not sell the type there
        region = regional.settings.region
        sold.append(region)
        answered = regional.reservations.block_offerings(instance_type, count, days)
        return [o.model_copy(update={"region": region, "days": days}) for o in answered]

    offerings, left_out = _in_every_region(ports, offered)
    if not sold:
        raise RequestRefused("instance_type", f"{instance_type} is not an NVIDIA GPU instance type GPU Pilot knows")
    ports.listed_offerings.remember_offerings(offerings)
    ordered = sorted(offerings, key=lambda o: (o.starts_at, o.upfront_usd, o.offering_id))
    return OfferingList(
        offerings=ordered, left_out=left_out, purchase_allowed=ports.settings.allow_capacity_block_purchase
    )


def purchase_block(request: PurchaseRequest, ports: Ports) -> ReservationView:
    """Buy one listed Capacity Block: PurchaseDisabled unless the deployment sets a ceiling; RequestRefused without
    `confirm`, for an offering not listed or no longer offered, or one whose fee exceeds max_upfront_usd or the
    deployment's ceiling;
    PurchaseInProgress when a purchase of it was claimed already."""
    if not ports.settings.allow_capacity_block_purchase:
        raise PurchaseDisabled(request.offering_id)
    if not request.confirm:
        raise RequestRefused("confirm", "a Capacity Block's fee is charged at once and it cannot be cancelled: send "
                             "confirm: true (gpupilot reserve --yes) to buy it")  # fmt: skip
    listed = ports.listed_offerings.listed_offering(request.offering_id)
    if listed is None:
        listing = "gpupilot reservations --offerings --type T --count N --days D"
        raise RequestRefused(
            "offering_id", f"{request.offering_id} is not an offering GPU Pilot listed in the last hour: list them "
            f"first ({listing})"
        )  # fmt: skip
    _within_limit(listed.upfront_usd, request, ports.settings.max_capacity_block_upfront_usd)
    # Offerings go first come, first served: EC2 is asked again in the offering's region, for the days it was listed
    # for (EC2 takes whole days; an offering's own length may be less), and its fee now is held to the limit.
    regional = ports.in_region(listed.region)
    days = listed.days or math.ceil(listed.hours / 24)
    current = next(
        (o for o in regional.reservations.block_offerings(listed.instance_type, listed.count, days)
         if o.offering_id == listed.offering_id),
        None,
    )  # fmt: skip
    if current is None:
        raise RequestRefused("offering_id", f"EC2 no longer offers {request.offering_id}: list the offerings again")
    _within_limit(current.upfront_usd, request, ports.settings.max_capacity_block_upfront_usd)
    if not ports.listed_offerings.claim_purchase(request.offering_id, now_iso()):
        raise PurchaseInProgress(request.offering_id)
    try:
        bought = regional.reservations.purchase_block(
            request.offering_id, {FEE_TAG: f"{current.upfront_usd:g}", PURCHASED_BY_TAG: "gpupilot"}
        )
    except Exception:
        ports.listed_offerings.release_purchase(request.offering_id)
        raise
    logger.info(
        "bought a Capacity Block", extra={"offering": request.offering_id, RESERVATION_TAG: bought.reservation_id}
    )
    return _view(bought.model_copy(update={"upfront_usd": current.upfront_usd}), 0.0, regional)


def _within_limit(fee: float, request: PurchaseRequest, ceiling: float) -> None:
    """The fee within what the caller states and within the deployment's ceiling, whatever the caller states."""
    if fee > request.max_upfront_usd:
        limit = f"max_upfront_usd ${request.max_upfront_usd:,.2f}"
        raise RequestRefused("max_upfront_usd", f"{request.offering_id} costs ${fee:,.2f} up front, more than {limit}")
    if fee > ceiling:
        limit = f"this deployment's ceiling (context max_capacity_block_upfront_usd) ${ceiling:,.2f}"
        raise RequestRefused("max_upfront_usd", f"{request.offering_id} costs ${fee:,.2f} up front, more than {limit}")


def record_reservation_waste(since: Callable[[], str | None], at: str, ports: Ports) -> float:
    """Charge the free instances of every active reservation GPU Pilot could launch into (`usable`) from the previous
    sweep (what `since` reads, asked only when the account holds one; a first sweep: the sweep interval before `at`)
    to `at`, at its rate, as reservation_idle waste billed to the account that pays for them; the USD added."""
    try:
        held = ports.reservations.reservations()
    except SignalUnavailable as error:
        logger.warning("reservations unavailable: their idle hours are not charged now", extra={"error": str(error)})
        return 0.0
    held = usable(held, ports) if held else []
    if not held:
        return 0.0
    start = since() or iso(parse_iso(at) - timedelta(seconds=FIRST_SWEEP_SECONDS))
    added: list[float] = []
    for reservation in held:
        rate = hourly_rate(reservation, ports.prices.on_demand(reservation.instance_type))
        if rate is None:
            continue
        for entry in reservation_idle(reservation, rate, start, at):
            try:
                added.append(ports.waste.record_waste(entry))
            except Exception:
                logger.exception("could not record reservation waste", extra={RESERVATION_TAG: entry.instance_id})
    return usd_sum(added)


def usable(held: list[Reservation], ports: Ports) -> list[Reservation]:
    """The reservations of `ports`' region GPU Pilot could launch into: of an NVIDIA GPU type EC2 sells there, for
    Linux/UNIX instances of default tenancy. Another team's Windows or CPU reservation idles at its own expense, not
    GPU Pilot's."""
    gpu_types = ports.catalog.gpu_types()
    return [r for r in held if r.instance_type in gpu_types and r.launch_problem() is None]
