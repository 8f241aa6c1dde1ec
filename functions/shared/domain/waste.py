"""What the fleet cost without serving a job: instances that never registered with ECS, registered without
their GPUs, or whose agent disconnected (from launch), and instances left alive in an idle pool (from when
the pool went idle). Pure.

Each sweep restates each such instance's waste so far (its seconds only grow), so the ledger holds one
entry per instance and reason, at most one sweep interval short of the instance's end.
"""

from __future__ import annotations

from pydantic import Field

from functions.shared.domain.batch import FleetState
from functions.shared.domain.clock import seconds_between
from functions.shared.domain.cost import PriceQuote, attempt_cost
from functions.shared.domain.fleet import FleetAnalysis
from functions.shared.domain.model import DomainModel

NEVER_REGISTERED = "never_registered"
NO_GPUS = "registered_without_gpus"
DISCONNECTED = "agent_disconnected"
IDLE = "idle"
REASONS = {"unregistered": NEVER_REGISTERED, "gpu_less": NO_GPUS, "disconnected": DISCONNECTED}


class WasteEntry(DomainModel):
    """One instance's cost that served no job, for one reason, so far."""

    instance_id: str
    reason: str
    pool: str
    instance_type: str
    day: str = Field(description="UTC day the waste began (YYYY-MM-DD): the /costs range it falls in")
    seconds: float
    hourly_usd: float
    usd: float
    pricing: str


def waste_of(
    pool: str,
    fleet: FleetState,
    analysis: FleetAnalysis,
    idle_since: str | None,
    at: str,
    price_of: dict[str, PriceQuote],
) -> list[WasteEntry]:
    """The pool's wasting instances now; `price_of` prices each instance type (unpriced ones are left out)."""
    launched = {i.instance_id: i.launched_at for i in fleet.instances if i.launched_at}
    entries: list[WasteEntry] = []
    flagged: set[str] = set()
    for attribute, reason in REASONS.items():
        for item in getattr(analysis, attribute):
            start = launched.get(item.instance_id)
            if start is not None:
                flagged.add(item.instance_id)
                entries += _entry(pool, item.instance_id, item.instance_type, reason, start, at, price_of)
    if idle_since is not None:
        for instance in fleet.instances:
            if instance.alive and instance.instance_id not in flagged and instance.launched_at:
                start = max(idle_since, instance.launched_at)
                entries += _entry(pool, instance.instance_id, instance.instance_type, IDLE, start, at, price_of)
    return entries


def _entry(
    pool: str, instance_id: str, instance_type: str, reason: str, start: str, at: str, price_of: dict[str, PriceQuote]
) -> list[WasteEntry]:
    quote = price_of.get(instance_type)
    if quote is None:
        return []
    seconds = max(0.0, seconds_between(start, at))
    cost = attempt_cost(quote, seconds, share=(1.0, "instance"))
    return [
        WasteEntry(
            instance_id=instance_id, reason=reason, pool=pool, instance_type=instance_type, day=start[:10],
            seconds=seconds, hourly_usd=quote.hourly_usd, usd=cost.usd, pricing=quote.pricing,
        )
    ]  # fmt: skip
