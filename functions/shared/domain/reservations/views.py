"""What the HTTP API answers about reserved capacity: the account's reservations (and what their idle hours cost), the
Capacity Blocks on offer, and the body of a purchase (docs/openapi.json)."""

from __future__ import annotations

from pydantic import ConfigDict, Field, StrictBool, StrictFloat

from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.money import PriceQuote
from functions.shared.domain.reservations.offerings import BlockOffering
from functions.shared.domain.reservations.reservation import Reservation, room_words

# An offering id as DescribeCapacityBlockOfferings gives them (cb-...): what a purchase names.
OFFERING_ID = r"^cb-[0-9a-z]{1,64}$"


class ReservationView(DomainModel):
    """One reservation of the account: what it holds, what of it is idle, and what its idle hours have cost."""

    reservation_id: str
    instance_type: str
    zone: str
    region: str | None = Field(default=None, description="The capacity region that holds it")
    state: str = Field(description="EC2's: active, scheduled, payment-pending, ...")
    capacity_block: bool
    match: str = Field(description="open or targeted")
    platform: str = Field(default="Linux/UNIX", description="The instances' operating system (GPU Pilot's: Linux/UNIX)")
    tenancy: str = Field(default="default", description="default or dedicated (GPU Pilot's: default)")
    total: int
    available: int = Field(description="Instances that can be launched into it now")
    in_use: int
    idle: int = Field(description="Reserved instances running nothing now (active: its available instances)")
    starts_at: str | None = None
    ends_at: str | None = None
    hours: float | None = None
    upfront_usd: float | None = Field(default=None, description="A Capacity Block's fee, when known")
    hourly_usd: float | None = Field(default=None, description="What one of its instance-hours costs the account")
    pricing: str | None = None
    idle_usd: float = Field(
        default=0.0, description="Its idle hours' cost the sweeps recorded (reservation_idle waste)"
    )
    words: str = Field(description="How a plan says it: reserved: cr-..., 3 of 4 free until ...")


class ReservationList(DomainModel):
    """Body of `GET /reservations`."""

    reservations: list[ReservationView]
    idle_usd: float = Field(description="The idle hours of all of them, as the sweeps recorded")
    left_out: dict[str, str] = Field(
        default_factory=dict, description="Each capacity region that could not be read, and why (AWS's words)"
    )


class OfferingList(DomainModel):
    """Body of `GET /reservations/offerings`: what `gpupilot reserve` may buy (listed for an hour)."""

    offerings: list[BlockOffering]
    left_out: dict[str, str] = Field(
        default_factory=dict, description="Each capacity region that could not be read, and why (AWS's words)"
    )
    purchase_allowed: bool = Field(
        default=False,
        description="Whether this deployment buys Capacity Blocks (POST /reservations/purchase): its context "
        "max_capacity_block_upfront_usd is above 0",
    )


class PurchaseRequest(DomainModel):
    """Body of `POST /reservations/purchase`: buy one listed Capacity Block, within a fee the caller states."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    offering_id: str = Field(pattern=OFFERING_ID, description="An offering GET /reservations/offerings listed (cb-...)")
    max_upfront_usd: StrictFloat = Field(
        ge=0.01, le=100_000_000, description="The most the caller agrees to pay up front: the offering's fee must not "
        "exceed it"
    )  # fmt: skip
    confirm: StrictBool = Field(
        default=False, description="true: buy it (its fee is charged at once, and a Capacity Block cannot be cancelled)"
    )


def reservation_view(
    reservation: Reservation, rate: PriceQuote | None, idle_usd: float, region: str | None = None
) -> ReservationView:
    """The public shape of a reservation held in `region`, priced at `rate` per instance-hour."""
    idle = reservation.available if reservation.state == "active" else 0
    return ReservationView(
        reservation_id=reservation.reservation_id,
        instance_type=reservation.instance_type,
        zone=reservation.zone,
        region=region,
        state=reservation.state,
        capacity_block=reservation.capacity_block,
        match=reservation.match,
        platform=reservation.platform,
        tenancy=reservation.tenancy,
        total=reservation.total,
        available=reservation.available,
        in_use=reservation.in_use,
        idle=idle,
        starts_at=reservation.starts_at,
        ends_at=reservation.ends_at,
        hours=reservation.hours,
        upfront_usd=reservation.upfront_usd,
        hourly_usd=rate.hourly_usd if rate else None,
        pricing=rate.pricing if rate else None,
        idle_usd=idle_usd,
        words=room_words(reservation),
    )
