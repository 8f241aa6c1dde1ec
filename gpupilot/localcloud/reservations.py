"""The account's reserved capacity in the local cloud: the world's Capacity Reservations and Capacity Blocks, the
Capacity Blocks EC2 offers, and the instances launched into each, as EC2 keeps them (moto keeps none of it).

Times are real: a reservation begins `starts_in_seconds` after the cloud starts and lasts `hours` (speedup does not
shorten them, as the workflow's Wait until a timestamp keeps real time). EC2's states: `scheduled` before the start
(available capacity shown as zero, the size in the incrementalRequestedQuantity tag), `active` until the end,
`expired` after; a Capacity Block's instances are taken back from 30 minutes before its end. A launch goes into a
reservation only of its type, zone, platform and tenancy ("You can only launch an instance into a Capacity
Reservation that has matching attributes (instance type, platform, Availability Zone, and tenancy)": EC2 User Guide),
and the fleet's launches are Linux/UNIX of default tenancy. An offering's length is whole hours and minutes
(CapacityBlockDurationHours, CapacityBlockDurationMinutes), answered to a question of the whole days it begins in.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from functions.shared.domain.reservations.reservation import (
    BLOCK_RECLAIM,
    DEFAULT_TENANCY,
    FEE_TAG,
    LINUX,
    REQUESTED_QUANTITY_TAG,
)
from gpupilot.localcloud.world import World

ACCOUNT = "123456789012"


@dataclass
class HeldReservation:
    """One reservation: its window (epoch seconds), its size, and the instances running in it."""

    reservation_id: str
    instance_type: str
    zone: str
    count: int
    starts: float
    ends: float
    capacity_block: bool
    match: str
    region: str
    upfront_usd: float | None = None
    tags: dict[str, str] = field(default_factory=dict)
    instances: set[str] = field(default_factory=set)
    platform: str = LINUX
    tenancy: str = DEFAULT_TENANCY

    def takes(self, instance_type: str, zone: str, region: str) -> bool:
        """Whether a launch of the fleet (Linux/UNIX, default tenancy) of `instance_type` in `zone` matches it."""
        matching = (self.instance_type, self.zone, self.region, self.platform, self.tenancy)
        return matching == (instance_type, zone, region, LINUX, DEFAULT_TENANCY)

    def state(self, now: float) -> str:
        if now < self.starts:
            return "scheduled"
        return "active" if now < self.ends else "expired"

    def available(self, now: float) -> int:
        return max(0, self.count - len(self.instances)) if self.state(now) == "active" else 0

    def reclaims_at(self) -> float:
        """When its instances are taken back: a Capacity Block's end less 30 minutes; an ODCR's never."""
        return self.ends - BLOCK_RECLAIM.total_seconds() if self.capacity_block else float("inf")

    def described(self, now: float) -> dict[str, Any]:
        """As DescribeCapacityReservations gives it (botocore's shape)."""
        tags = dict(self.tags)
        if self.state(now) == "scheduled" and self.capacity_block:
            tags[REQUESTED_QUANTITY_TAG] = str(self.count)
        if self.upfront_usd is not None:
            tags[FEE_TAG] = f"{self.upfront_usd:g}"
        # Before a Capacity Block begins EC2 shows its capacity as zero.
        total = 0 if self.state(now) == "scheduled" and self.capacity_block else self.count
        return {
            "CapacityReservationId": self.reservation_id,
            "OwnerId": ACCOUNT,
            "CapacityReservationArn": f"arn:aws:ec2:{self.region}:{ACCOUNT}:capacity-reservation/{self.reservation_id}",
            "InstanceType": self.instance_type,
            "InstancePlatform": self.platform,
            "AvailabilityZone": self.zone,
            "Tenancy": self.tenancy,
            "TotalInstanceCount": total,
            "AvailableInstanceCount": self.available(now),
            "State": self.state(now),
            "StartDate": _iso(self.starts),
            "EndDate": _iso(self.ends),
            "EndDateType": "limited",
            "InstanceMatchCriteria": self.match,
            "CreateDate": _iso(min(self.starts, now)),
            "ReservationType": "capacity-block" if self.capacity_block else "default",
            "Tags": [{"Key": k, "Value": v} for k, v in sorted(tags.items())],
        }


@dataclass(frozen=True)
class Offering:
    """A Capacity Block EC2 offers, bought at most once."""

    offering_id: str
    instance_type: str
    zone: str
    count: int
    starts: float
    hours: float
    upfront_usd: float
    region: str

    @property
    def days(self) -> int:
        """The whole days EC2 offers it for: those it begins in."""
        return math.ceil(round(self.hours * 60) / (24 * 60))

    def described(self) -> dict[str, Any]:
        minutes = round(self.hours * 60)
        return {
            "CapacityBlockOfferingId": self.offering_id,
            "InstanceType": self.instance_type,
            "AvailabilityZone": self.zone,
            "InstanceCount": self.count,
            "StartDate": _iso(self.starts),
            "EndDate": _iso(self.starts + minutes * 60),
            "CapacityBlockDurationHours": minutes // 60,
            "CapacityBlockDurationMinutes": minutes % 60,
            "UpfrontFee": f"{self.upfront_usd:.2f}",
            "CurrencyCode": "USD",
            "Tenancy": "default",
        }


class ReservationBook:
    """What EC2 knows of the account's reservations and offerings; the fleet launches into it."""

    def __init__(self, world: World, clock: Any = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        began = clock()
        self.reservations: dict[str, HeldReservation] = {}
        for spec in world.capacity_reservations:
            held = self._add(
                spec.instance_type, spec.zone, spec.count, began + spec.starts_in_seconds, spec.hours,
                spec.capacity_block, spec.match, spec.region or world.region, spec.upfront_usd,
            )  # fmt: skip
            held.platform, held.tenancy = spec.platform, spec.tenancy
        self.offerings = [
            Offering(f"cb-{uuid.uuid4().hex[:17]}", o.instance_type,
                     o.zone or world.in_region(o.region or world.region).zones[0], o.count,
                     began + o.starts_in_seconds, o.hours, o.upfront_usd, o.region or world.region)
            for o in world.capacity_block_offerings
        ]  # fmt: skip

    @classmethod
    def empty(cls) -> ReservationBook:
        """An account that holds no reservation and is offered no Capacity Block."""
        return cls(World())

    def now(self) -> float:
        return float(self._clock())

    def _add(self, instance_type: str, zone: str, count: int, starts: float, hours: float, block: bool, match: str,
             region: str, fee: float | None, tags: dict[str, str] | None = None) -> HeldReservation:  # fmt: skip
        held = HeldReservation(
            f"cr-{uuid.uuid4().hex[:17]}", instance_type, zone, count, starts, starts + hours * 3600, block,
            match, region, fee, dict(tags or {}),
        )  # fmt: skip
        self.reservations[held.reservation_id] = held
        return held

    def described(self, region: str, ids: list[str] | None = None) -> list[dict[str, Any]]:
        """The reservations EC2 describes in `region` (reservations are regional: another region's are not there)."""
        now = self.now()
        with self._lock:
            return [
                r.described(now)
                for r in self.reservations.values()
                if r.region == region and (not ids or r.reservation_id in ids)
            ]

    def offered(self, region: str) -> list[Offering]:
        """The Capacity Block offerings EC2 answers in `region`."""
        with self._lock:
            return [o for o in self.offerings if o.region == region]

    def launch_into(
        self, reservation_id: str | None, instance_type: str, zone: str, region: str
    ) -> HeldReservation | None:
        """The reservation a launch of `instance_type` in `zone` runs in: the one it targets (None when that one
        cannot take it: not active, full, another type or zone), or else an open active one with room (EC2:
        "Instances that have matching attributes launch into the Capacity Reservation automatically")."""
        now = self.now()
        with self._lock:
            if reservation_id is not None:
                held = self.reservations.get(reservation_id)
                fits = held is not None and held.takes(instance_type, zone, region)
                # A launch into a block EC2 is taking back would be terminated at once: none is made.
                taking_back = held is not None and now >= held.reclaims_at()
                return held if fits and held is not None and held.available(now) > 0 and not taking_back else None
            return next(
                (r for r in self.reservations.values()
                 if r.match == "open" and r.takes(instance_type, zone, region) and r.available(now) > 0),
                None,
            )  # fmt: skip

    def hold(self, reservation: HeldReservation, instance_id: str) -> None:
        with self._lock:
            reservation.instances.add(instance_id)

    def release(self, instance_id: str) -> None:
        with self._lock:
            for reservation in self.reservations.values():
                reservation.instances.discard(instance_id)

    def purchase(self, offering_id: str, tags: dict[str, str], region: str) -> HeldReservation | None:
        """The offering bought (once) in `region`: a Capacity Block reservation from its start; None: no such
        offering there."""
        with self._lock:
            offering = next((o for o in self.offerings if (o.offering_id, o.region) == (offering_id, region)), None)
            if offering is None:
                return None
            self.offerings.remove(offering)
        return self._add(
            offering.instance_type, offering.zone, offering.count, offering.starts, offering.hours, True,
            "targeted", offering.region, offering.upfront_usd, tags,
        )  # fmt: skip


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, tz=UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
