"""The share of an instance no job held: what the account paid for while its jobs ran, that no job's cost counts
(waste `unused_share`). Pure.

An attempt costs its share of the instance (domain/cost/attempts.py): a 1-GPU job alone on an 8-GPU p4d.24xlarge
costs an eighth of it, and the account pays for all eight. Each instance keeps one ledger of the attempts priced on it
(Batch names the container instance an attempt ran on): while any of them ran, the part of the instance none of
them held is its unused share, so the attempts' costs plus the unused share are what the instance cost while it
served them. Attempts that shared the instance share it: two 1-GPU jobs side by side on an 8-GPU host leave six
eighths unused, not fourteen. The ledger is restated from its attempts each time one is added, so attempts priced in
any order, or twice, come to the same figure.
"""

from __future__ import annotations

import itertools
from datetime import timedelta
from decimal import Decimal

from pydantic import Field

from functions.shared.domain.core.clock import parse_iso
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.money import PLACES, SECONDS_PER_HOUR, dollars
from functions.shared.domain.cost.waste import WasteEntry

UNUSED_SHARE = "unused_share"
# A ledger keeps this many attempts; older ones that no kept attempt overlaps are folded into its totals (an item of
# the table holds at most 400 KB).
MAX_OCCUPANTS = 256


class Occupant(DomainModel):
    """One attempt on the instance: when it ran there, the share of the instance it held, at what price."""

    start: str
    stop: str
    share: float
    hourly_usd: float


class SharedInstance(DomainModel):
    """One instance's ledger: its attempts, and the share of it none of them held while any ran."""

    instance_id: str = Field(description="The EC2 instance (ECS's ec2InstanceId)")
    pool: str
    instance_type: str
    day: str = Field(description="UTC day the instance registered with ECS (YYYY-MM-DD): the /costs range")
    pricing: str = ""
    occupants: dict[str, Occupant] = Field(default_factory=dict, description="By job_id#attempt")
    folded_seconds: float = Field(default=0.0, description="Unused instance-seconds of the attempts folded away")
    folded_usd: float = Field(default=0.0, description="Unused share's cost of the attempts folded away")
    seconds: float = Field(default=0.0, description="Instance-seconds no attempt held, while any ran")
    usd: float = Field(default=0.0, description="What those cost")

    def entries(self) -> list[WasteEntry]:
        """The unused share as a waste entry (reason unused_share); none when its jobs held all of it."""
        if not self.usd:
            return []
        starts = [o.start for o in self.occupants.values()]
        stops = [o.stop for o in self.occupants.values()]
        hourly = min((o.hourly_usd for o in self.occupants.values()), default=0.0)
        return [WasteEntry(
            instance_id=self.instance_id, reason=UNUSED_SHARE, pool=self.pool, instance_type=self.instance_type,
            day=self.day, seconds=self.seconds, hourly_usd=hourly, usd=self.usd, pricing=self.pricing,
            started_at=min(starts, default=""), at=max(stops, default=""),
        )]  # fmt: skip


def occupant(stopped_at: str, runtime_seconds: float, share: float, hourly_usd: float) -> Occupant:
    """An attempt that ran `runtime_seconds` up to `stopped_at` (Batch's own retries included: all of it here)."""
    start = parse_iso(stopped_at) - timedelta(seconds=runtime_seconds)
    begun = start.isoformat(timespec="microseconds").replace("+00:00", "Z")
    return Occupant(start=begun, stop=stopped_at, share=share, hourly_usd=hourly_usd)


def occupy(ledger: SharedInstance, key: str, attempt: Occupant) -> SharedInstance | None:
    """The ledger with the attempt in it and its unused share restated; None when it is in it already."""
    if key in ledger.occupants:
        return None
    occupants = ledger.occupants | {key: attempt}
    folded_seconds, folded_usd = Decimal(repr(ledger.folded_seconds)), dollars(ledger.folded_usd)
    if len(occupants) > MAX_OCCUPANTS:
        occupants, seconds, usd = _fold(occupants)
        folded_seconds, folded_usd = folded_seconds + seconds, folded_usd + usd
    seconds, usd = unused(list(occupants.values()))
    return ledger.model_copy(
        update={
            "occupants": occupants,
            "folded_seconds": float(folded_seconds),
            "folded_usd": float(folded_usd),
            "seconds": float(seconds + folded_seconds),
            "usd": float((usd + folded_usd).quantize(PLACES)),
        }
    )


def unused(occupants: list[Occupant]) -> tuple[Decimal, Decimal]:
    """(instance-seconds, USD) of the instance none of the attempts held while any of them ran: in each stretch
    between two of their starts and stops, 1 - the shares of those running (never below 0), at the lowest of
    their prices (the one price, on-demand)."""
    times = sorted({parse_iso(t) for o in occupants for t in (o.start, o.stop)})
    spans = [(parse_iso(o.start), parse_iso(o.stop), o) for o in occupants]
    seconds, usd = Decimal(0), Decimal(0)
    for begin, end in itertools.pairwise(times):
        running = [o for start, stop, o in spans if start <= begin and stop >= end]
        if not running:
            continue
        held = min(Decimal(1), sum((dollars(o.share) for o in running), Decimal(0)))
        length = Decimal(repr((end - begin).total_seconds()))
        free = (Decimal(1) - held) * length
        seconds += free
        usd += dollars(min(o.hourly_usd for o in running)) * free / SECONDS_PER_HOUR
    return seconds, usd


def _fold(occupants: dict[str, Occupant]) -> tuple[dict[str, Occupant], Decimal, Decimal]:
    """Keep the newest half; fold the older attempts no kept one overlaps into totals (what they left unused)."""
    by_stop = sorted(occupants.items(), key=lambda item: parse_iso(item[1].stop))
    kept = dict(by_stop[len(by_stop) // 2 :])
    earliest = min(parse_iso(o.start) for o in kept.values())
    folded = {k: o for k, o in by_stop[: len(by_stop) // 2] if parse_iso(o.stop) <= earliest}
    seconds, usd = unused(list(folded.values()))
    return {k: o for k, o in occupants.items() if k not in folded}, seconds, usd
