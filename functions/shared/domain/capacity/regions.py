"""Selection across capacity regions: each region's offerings found with its own signals (offerings, quotas, prices,
spot signals), ranked together, and each region's outcome: how many candidates it gave, or why none. Pure."""

from __future__ import annotations

from functions.shared.domain.capacity.band import outside_band, times
from functions.shared.domain.capacity.offers import Plan, RegionOutcome, Signals
from functions.shared.domain.capacity.ranking import rank
from functions.shared.domain.capacity.selection import (
    BLOCKED,
    FILTER,
    PRICE,
    QUOTA,
    SHAPE,
    UNKNOWN,
    Found,
    beyond_band,
    offerings_and_reservations,
)
from functions.shared.domain.requests.job_request import JobRequest

# Rejections that do not depend on the region: the request named an unknown type, or the type's shape or the
# request's filters rule it out.
REGION_INDEPENDENT = frozenset({UNKNOWN, SHAPE, FILTER})


def plan_across(request: JobRequest, regions: list[Signals], left_out: dict[str, str] | None = None) -> Plan:
    """`plan` over several capacity regions, each with its own signals: their offerings ranked together (the price
    band held against the cheapest of them all), and each region's outcome, with `left_out`'s (region -> why,
    those not weighed at all) and why a weighed region gave no candidate."""
    found = Found([], [], [])
    shared: set[tuple[str, str, str | None]] = set()
    outcomes: list[RegionOutcome] = []
    for signals in regions:
        own = offerings_and_reservations(request, signals)
        found.options.extend(own.options)
        found.blocked.extend(own.blocked)
        for rejection in own.rejections:
            if rejection.order[0] in REGION_INDEPENDENT:
                # A shape or filter rules a type out in every region: said once.
                said = (rejection.rejected.instance_type, rejection.rejected.reason, rejection.rejected.field)
                if said in shared:
                    continue
                shared.add(said)
            else:
                rejection.rejected.region = signals.region
            found.rejections.append(rejection)
        if signals.region is not None:
            outcomes.append(_outcome(signals.region, own))
    candidates, beyond = rank(request, found.options)
    rejections = found.rejections + [beyond_band(request, option) for option in beyond]
    outside = outside_band(request, candidates, found.blocked)
    if outside is not None:
        candidates[0].why += f"; {times(outside.ratio)} {outside.cheapest_type}, which cannot start"
    if len(regions) > 1:
        for candidate in candidates:
            candidate.why = f"in {candidate.region}; {candidate.why}"
    for outcome in outcomes:
        outcome.candidates = sum(1 for c in candidates if c.region == outcome.region)
        if outcome.candidates == 0 and outcome.left_out is None:
            outcome.left_out = "its offerings are beyond the price band of the other regions' cheaper candidates"
    outcomes += [RegionOutcome(region=region, left_out=why) for region, why in (left_out or {}).items()]
    return Plan(
        candidates=candidates,
        rejected=[r.rejected for r in sorted(rejections, key=lambda r: r.order)],
        outside_band=outside,
        regions=outcomes,
    )


def _outcome(region: str, found: Found) -> RegionOutcome:
    """What a weighed region gave: its candidates (counted once ranked), or why none, in a few words with the
    kinds of its rejections (no quota, not offered in its zones, the memory of recent shortages, the price)."""
    if found.options:
        return RegionOutcome(region=region)
    kinds = {r.order[0] for r in found.rejections}
    words = []
    if QUOTA in kinds:
        quotas = {b.quota.code: b.quota.vcpus for b in found.blocked if b.cause == "quota" and b.quota is not None}
        quoted = ", ".join(f"{code} is {vcpus:g} vCPUs" for code, vcpus in sorted(quotas.items()))
        words.append("no quota" + (f" ({quoted})" if quoted else ""))
    blocked = [r for r in found.rejections if r.order[0] == BLOCKED]
    if any(r.rejected.reason.startswith("not offered") for r in blocked):
        words.append("not offered in its zones")
    if any(not r.rejected.reason.startswith("not offered") for r in blocked):
        words.append("recently unavailable")
    if PRICE in kinds:
        words.append("beyond max_hourly_usd or the price band")
    if not words:
        words.append("no GPU type fits the request")
    return RegionOutcome(region=region, left_out="; ".join(words))
