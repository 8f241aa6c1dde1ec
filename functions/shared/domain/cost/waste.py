"""What the fleet cost without serving a job: instances that never registered with ECS, registered without
their GPUs, or whose agent disconnected (from launch), bad GPU hosts the sweep quarantined (since their last
successful job: domain/quarantine.waste_since), and instances left alive in an idle pool (from when the pool
went idle). Pure.

Each sweep sees each such instance's waste so far (its span only grows). The ledger keeps one item per
instance, whatever reasons the sweeps see it under, and charges only the part of a span not charged before,
so no second of an instance is counted twice; it falls at most one sweep interval short of the instance's end.

A reservation's idle hours are waste too (`reservation_idle`): the account pays for reserved instances whether they
run or not. Each sweep charges the instances the reservation has free now for the time since the sweep before (EC2
says how many are free now, not how many were: the count is taken to have held since), one ledger item per
reservation and UTC day, so a sweep that runs twice charges once.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field

from functions.shared.domain.core.clock import iso, parse_iso, seconds_between
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.money import PriceQuote, usd_sum
from functions.shared.domain.core.vocabulary import counted
from functions.shared.domain.cost.attempts import attempt_cost
from functions.shared.domain.fleet.analysis import FleetAnalysis
from functions.shared.domain.fleet.batch import Ec2InstanceState, FleetState
from functions.shared.domain.reservations.reservation import ACTIVE, Reservation

NEVER_REGISTERED = "never_registered"
NO_GPUS = "registered_without_gpus"
DISCONNECTED = "agent_disconnected"
IDLE = "idle"
RESERVATION_IDLE = "reservation_idle"
BAD_HOST = "bad_host"
REASONS = {"unregistered": NEVER_REGISTERED, "gpu_less": NO_GPUS, "disconnected": DISCONNECTED}


class WasteEntry(DomainModel):
    """One instance's cost that served no job, for one reason: what a sweep saw, or what the ledger charged."""

    instance_id: str
    reason: str
    pool: str
    instance_type: str
    day: str = Field(description="UTC day the instance launched (YYYY-MM-DD): the /costs range it falls in")
    seconds: float
    hourly_usd: float
    usd: float
    pricing: str
    started_at: str = Field(default="", description="When this waste began (empty in entries stored before)")
    at: str = Field(default="", description="When the sweep saw it (empty in entries stored before)")
    billed_to: str = Field(default="", description="reservation_idle: the account the reservation's idle hours are on")


class InstanceWaste(DomainModel):
    """One instance in the ledger: the span of its life charged (once, whatever the reasons), and by reason."""

    instance_id: str
    pool: str
    instance_type: str
    day: str
    hourly_usd: float
    pricing: str
    charged_from: str
    charged_until: str
    seconds: dict[str, float] = Field(default_factory=dict, description="Seconds charged, by reason")
    usd: dict[str, float] = Field(default_factory=dict, description="USD charged, by reason")
    billed_to: str = ""

    def entries(self) -> list[WasteEntry]:
        """What it was charged, one entry per reason."""
        return [
            WasteEntry(
                instance_id=self.instance_id, reason=reason, pool=self.pool, instance_type=self.instance_type,
                day=self.day, seconds=self.seconds.get(reason, 0.0), hourly_usd=self.hourly_usd, usd=usd,
                pricing=self.pricing, started_at=self.charged_from, at=self.charged_until, billed_to=self.billed_to,
            )
            for reason, usd in sorted(self.usd.items())
        ]  # fmt: skip


def charge(ledger: InstanceWaste | None, entry: WasteEntry) -> tuple[InstanceWaste, float]:
    """The instance's ledger after a sweep saw `entry`, and the USD it adds (0: nothing to write): only the
    part of the entry's span [started_at, at] outside the span already charged, under the entry's reason."""
    start, end = entry.started_at, entry.at
    if not start or not end:
        raise ValueError("a waste entry to charge needs its span (started_at, at)")
    if ledger is None:
        seconds = seconds_between(start, end)
        ledger = InstanceWaste(
            instance_id=entry.instance_id, pool=entry.pool, instance_type=entry.instance_type, day=entry.day,
            hourly_usd=entry.hourly_usd, pricing=entry.pricing, charged_from=start, charged_until=end,
            billed_to=entry.billed_to,
        )  # fmt: skip
    else:
        before = seconds_between(start, min(end, ledger.charged_from, key=parse_iso))
        after = seconds_between(max(start, ledger.charged_until, key=parse_iso), end)
        seconds = before + after
        ledger = ledger.model_copy(
            update={
                "charged_from": min(start, ledger.charged_from, key=parse_iso),
                "charged_until": max(end, ledger.charged_until, key=parse_iso),
            },
            deep=True,
        )
    if seconds <= 0:
        return ledger, 0.0
    quote = PriceQuote(hourly_usd=entry.hourly_usd, pricing=entry.pricing)
    cost = attempt_cost(quote, seconds, share=(1.0, "instance"))
    ledger.seconds[entry.reason] = ledger.seconds.get(entry.reason, 0.0) + seconds
    ledger.usd[entry.reason] = usd_sum([ledger.usd.get(entry.reason, 0.0), cost.usd])
    ledger.hourly_usd, ledger.pricing = entry.hourly_usd, entry.pricing
    return ledger, cost.usd


def waste_of(
    pool: str,
    fleet: FleetState,
    analysis: FleetAnalysis,
    idle_since: str | None,
    at: str,
    price_of: dict[str, PriceQuote],
    bad_hosts: dict[str, str] | None = None,
) -> list[WasteEntry]:
    """The pool's wasting instances now; `price_of` prices each instance type (unpriced ones are left out);
    `bad_hosts` are quarantined instances and from when their cost is waste (their reason comes first)."""
    launched = {i.instance_id: i for i in fleet.instances if i.launched_at}
    entries: list[WasteEntry] = []
    flagged: set[str] = set()
    for instance_id, since in sorted((bad_hosts or {}).items()):
        instance = launched.get(instance_id)
        if instance is not None and instance.launched_at:
            flagged.add(instance_id)
            entries += _entry(pool, instance, BAD_HOST, max(since, instance.launched_at, key=parse_iso), at, price_of)
    for attribute, reason in REASONS.items():
        for item in getattr(analysis, attribute):
            instance = launched.get(item.instance_id)
            if instance is not None and item.instance_id not in flagged:
                flagged.add(item.instance_id)
                entries += _entry(pool, instance, reason, instance.launched_at or at, at, price_of)
    if idle_since is not None:
        for instance in launched.values():
            if instance.alive and instance.instance_id not in flagged and instance.launched_at:
                start = max(idle_since, instance.launched_at, key=parse_iso)
                entries += _entry(pool, instance, IDLE, start, at, price_of)
    return entries


def _entry(
    pool: str, instance: Ec2InstanceState, reason: str, start: str, at: str, price_of: dict[str, PriceQuote]
) -> list[WasteEntry]:
    quote = price_of.get(instance.instance_type)
    if quote is None or not instance.launched_at:
        return []
    seconds = max(0.0, seconds_between(start, at))
    cost = attempt_cost(quote, seconds, share=(1.0, "instance"))
    return [
        WasteEntry(
            instance_id=instance.instance_id, reason=reason, pool=pool, instance_type=instance.instance_type,
            day=instance.launched_at[:10], seconds=seconds, hourly_usd=quote.hourly_usd, usd=cost.usd,
            pricing=quote.pricing, started_at=start, at=at,
        )
    ]  # fmt: skip


def reservation_idle(reservation: Reservation, rate: PriceQuote, since: str, at: str) -> list[WasteEntry]:
    """The reservation's free instances (now) over [since, at], from when it began, at `rate` per instance-hour: one
    entry per UTC day the span covers (the /costs day it falls in). None while it is not active or has none free."""
    if reservation.state != ACTIVE or reservation.available <= 0:
        return []
    start = max(since, reservation.starts_at or since, key=parse_iso)
    entries: list[WasteEntry] = []
    idle = reservation.available
    quote = PriceQuote(hourly_usd=rate.hourly_usd * idle, pricing=f"{counted(idle, 'idle instance')} x {rate.pricing}")
    while parse_iso(start) < parse_iso(at):
        midnight = parse_iso(start).replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
        end = min(at, iso(midnight), key=parse_iso)
        seconds = seconds_between(start, end)
        cost = attempt_cost(quote, seconds, share=(1.0, "instance"))
        entries.append(
            WasteEntry(
                instance_id=reservation.reservation_id, reason=RESERVATION_IDLE, pool="",
                instance_type=reservation.instance_type, day=start[:10], seconds=seconds, hourly_usd=quote.hourly_usd,
                usd=cost.usd, pricing=quote.pricing, started_at=start, at=end, billed_to=reservation.billed_to or "",
            )
        )  # fmt: skip
        start = end
    return entries
