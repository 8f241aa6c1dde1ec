"""Reserved capacity the account already holds: On-Demand Capacity Reservations (ODCRs) and Capacity Blocks for ML,
as plain data, and the rules GPU Pilot holds them to. Pure.

- A reservation with room costs nothing more to use: the account pays for it whether instances run in it or not
  (an ODCR at the on-demand rate once active; a Capacity Block's fee up front), so its marginal price is zero.
- An ODCR with `open` match criteria takes any matching on-demand launch; a `targeted` one (every Capacity Block is
  delivered targeted) only launches that name it: GPU Pilot uses open ones for on-demand jobs, and targeted or
  scheduled ones only when a request names them (`reservation`) or asks for reserved capacity (`capacity: reserved`).
- A Capacity Block ends: EC2 begins terminating its instances 30 minutes before its end, so a job whose
  timeout_minutes (and the minutes an instance takes to start) do not fit before then is not placed on it. An ODCR's
  instances run on past its end, as ordinary on-demand instances.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import Field

from functions.shared.domain.core.clock import iso, parse_iso, seconds_between
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.money import FEE_TAG, PriceQuote, reserved_rate

ACTIVE = "active"
SCHEDULED = "scheduled"
OPEN = "open"
TARGETED = "targeted"
CAPACITY_BLOCK = "capacity-block"
# EC2: "Thirty minutes before the reservation expires, we begin to terminate any instances that are still running in
# the Capacity Block."
BLOCK_RECLAIM = timedelta(minutes=30)
# An instance launched into a reservation boots and registers with ECS before the job starts (minutes; the finish
# wait allows as much past timeout_minutes).
START_MARGIN = timedelta(minutes=10)
# Before a Capacity Block begins, EC2 shows its available capacity as zero and its size in this tag.
REQUESTED_QUANTITY_TAG = "aws:ec2capacityreservation:incrementalRequestedQuantity"
RESERVATION_TAG = "gpupilot:reservation"
# The tag of a Capacity Block GPU Pilot bought (its purchase grant requires it).
PURCHASED_BY_TAG = "gpupilot:purchased-by"
# What GPU Pilot launches: Batch's ECS GPU AMI is Amazon Linux, on shared hardware. "You can only launch an instance
# into a Capacity Reservation that has matching attributes (instance type, platform, Availability Zone, and tenancy)"
# (EC2 User Guide, "Launch instances into an existing Capacity Reservation"): one whose InstancePlatform is another
# (Windows, Red Hat Enterprise Linux, ...) or whose Tenancy is dedicated (DescribeCapacityReservations) takes none.
LINUX = "Linux/UNIX"
DEFAULT_TENANCY = "default"


class Reservation(DomainModel):
    """One Capacity Reservation of the account (an ODCR or a Capacity Block), as DescribeCapacityReservations says."""

    reservation_id: str = Field(description="cr-...")
    instance_type: str
    zone: str
    state: str = Field(description="EC2's state: active, scheduled, expired, cancelled, payment-pending, ...")
    total: int = Field(description="Instances it holds (a Capacity Block's size before it begins)")
    available: int = Field(description="Instances that can still be launched into it now")
    starts_at: str | None = None
    ends_at: str | None = Field(default=None, description="None: no end date (an ODCR of unlimited duration)")
    capacity_block: bool = False
    match: str = Field(default=OPEN, description="open: matching on-demand launches use it; targeted: only those "
                       "that name it")  # fmt: skip
    upfront_usd: float | None = Field(default=None, description="A Capacity Block's fee, when known (its tag)")
    platform: str = Field(default=LINUX, description="EC2's InstancePlatform: the operating system it reserves for")
    tenancy: str = Field(default=DEFAULT_TENANCY, description="default (shared hardware) or dedicated")
    billed_to: str | None = Field(default=None, description="The account its unused capacity is billed to")

    @property
    def kind(self) -> str:
        return "Capacity Block" if self.capacity_block else "On-Demand Capacity Reservation"

    @property
    def hours(self) -> float | None:
        """Its length, when it has an end."""
        if not self.starts_at or not self.ends_at:
            return None
        return seconds_between(self.starts_at, self.ends_at) / 3600

    @property
    def in_use(self) -> int:
        return max(0, self.total - self.available) if self.state == ACTIVE else 0

    def room(self) -> bool:
        """Active, with an instance free now."""
        return self.state == ACTIVE and self.available > 0

    def usable_until(self) -> str | None:
        """When its instances go: a Capacity Block's end less the half hour EC2 takes them back in (None: never)."""
        if not self.capacity_block or not self.ends_at:
            return None
        return iso(parse_iso(self.ends_at) - BLOCK_RECLAIM)

    def launch_problem(self) -> str | None:
        """Why no GPU Pilot instance can ever launch into it (its platform or tenancy), or None."""
        if self.platform != LINUX:
            return f"reserves {self.platform} instances: GPU Pilot launches {LINUX} ones (Batch's ECS GPU AMI)"
        if self.tenancy != DEFAULT_TENANCY:
            return f"{self.tenancy} tenancy: GPU Pilot launches instances of {DEFAULT_TENANCY} tenancy"
        return None


def moment(at: str) -> str:
    """`2026-11-25 11:30 UTC`: a reservation's times span days, so the date is said too."""
    return f"{parse_iso(at):%Y-%m-%d %H:%M} UTC"


def described_time(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return iso(value) if hasattr(value, "astimezone") else iso(parse_iso(str(value)))


def reservation_of(described: dict[str, Any]) -> Reservation:
    """A reservation from one entry of DescribeCapacityReservations (botocore's shape)."""
    tags = {t.get("Key", ""): t.get("Value", "") for t in described.get("Tags") or []}
    total = int(described.get("TotalInstanceCount") or 0)
    requested = tags.get(REQUESTED_QUANTITY_TAG, "")
    if requested.isdigit():
        total = max(total, int(requested))
    fee: float | None = None
    try:
        fee = float(tags[FEE_TAG]) if FEE_TAG in tags else None
    except ValueError:
        fee = None
    return Reservation(
        reservation_id=str(described["CapacityReservationId"]),
        instance_type=str(described.get("InstanceType", "")),
        zone=str(described.get("AvailabilityZone", "")),
        state=str(described.get("State", "")),
        total=total,
        available=int(described.get("AvailableInstanceCount") or 0),
        starts_at=described_time(described.get("StartDate")),
        ends_at=None if described.get("EndDateType") == "unlimited" else described_time(described.get("EndDate")),
        capacity_block=described.get("ReservationType") == CAPACITY_BLOCK,
        match=str(described.get("InstanceMatchCriteria") or OPEN),
        upfront_usd=fee,
        platform=str(described.get("InstancePlatform") or LINUX),
        tenancy=str(described.get("Tenancy") or DEFAULT_TENANCY),
        # "The ID of the AWS account to which billing of the unused capacity of the Capacity Reservation is assigned"
        # (UnusedReservationBillingOwnerId), else its owner's (OwnerId): whose idle hours they are.
        billed_to=described.get("UnusedReservationBillingOwnerId") or described.get("OwnerId") or None,
    )


def fit_problem(reservation: Reservation, timeout_minutes: int, attempts: int, at: str) -> str | None:
    """Why a job of `timeout_minutes` starting at `at` (or when the block begins) cannot finish on a Capacity Block
    before EC2 takes its instances back, counting every one of the `attempts` Batch may run it (each up to its timeout
    after an instance starts); None when it can (and for an ODCR, whose instances outlive it)."""
    until = reservation.usable_until()
    if until is None:
        return None
    start = max(at, reservation.starts_at or at, key=parse_iso)
    needed = (timedelta(minutes=timeout_minutes) + START_MARGIN) * attempts
    if parse_iso(start) + needed <= parse_iso(until):
        return None
    left = max(0.0, seconds_between(start, until) / 60)
    tries = f", for each of the {attempts} tries Batch may make" if attempts > 1 else ""
    return (
        f"timeout_minutes {timeout_minutes} and {START_MARGIN.seconds // 60} min for an instance to start{tries} "
        f"({needed.total_seconds() / 60:.0f} min) does not fit in the {left:.0f} min left on Capacity Block "
        f"{reservation.reservation_id} before EC2 takes its instances back at {moment(until)} "
        f"(30 min before it ends at {moment(reservation.ends_at or until)})"
    )


def room_words(reservation: Reservation) -> str:
    """`reserved: cr-..., 3 of 4 free until 2026-11-25 11:30 UTC` (how plan and status say a reservation)."""
    what = f"reserved: {'Capacity Block ' if reservation.capacity_block else ''}{reservation.reservation_id}"
    until = f"until {moment(reservation.ends_at)}" if reservation.ends_at else "no end date"
    if reservation.state == SCHEDULED and reservation.starts_at:
        return f"{what}, {reservation.total} from {moment(reservation.starts_at)} {until}"
    return f"{what}, {reservation.available} of {reservation.total} free {until}"


def waiting_words(reservation: Reservation) -> str:
    """The reason a job waits for a Capacity Block (or a future-dated reservation) that has not begun."""
    kind = "Capacity Block" if reservation.capacity_block else "Capacity Reservation"
    return f"waiting for {kind} {reservation.reservation_id} starting at {moment(reservation.starts_at or '')}"


def hourly_rate(reservation: Reservation, on_demand: PriceQuote | None) -> PriceQuote | None:
    """What an instance-hour of the reservation costs the account, adding nothing to the bill (money.reserved_rate)."""
    return reserved_rate(
        reservation.reservation_id,
        reservation.capacity_block,
        on_demand,
        reservation.upfront_usd,
        reservation.total,
        reservation.hours,
    )


def reservation_launch_template(base: str, base_version: int, reservation: Reservation) -> str:
    """The name of the launch template that targets the reservation, made from version `base_version` of the stack's
    launch template `base` (a new version of it makes another, and so a new pool version)."""
    return f"{base}-{reservation.reservation_id}-v{base_version}"


def reservation_launch_data(base: dict[str, Any], reservation: Reservation) -> dict[str, Any]:
    """The stack's launch template data (user data, metadata options, volumes), targeting the reservation: launches
    run only in it, and a Capacity Block's with its market type ("To use your Capacity Block, you must specify the
    Capacity Block reservation ID when launching instances")."""
    data = {k: v for k, v in base.items() if k not in ("CapacityReservationSpecification", "InstanceMarketOptions")}
    data["CapacityReservationSpecification"] = {
        "CapacityReservationTarget": {"CapacityReservationId": reservation.reservation_id}
    }
    if reservation.capacity_block:
        data["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
    return data


class ReservationWait(DomainModel):
    """An attempt waiting for its reservation to begin (a Capacity Block bought for later), before its pool exists."""

    attempt: int
    reservation: str
    starts_at: str
    reason: str = Field(description="waiting for Capacity Block cr-... starting at ...")
