"""Step 6 of the planning walk (planning.py), the plan out: the ranked candidates, the rejections, each capacity
region's outcome, and the first choice held against the cheapest offering that fits the request whatever blocks it
(a quota, the zones' offerings, a recent shortage): past `price_band` times that one, the cheap types are all blocked
and the job would cost many times what it could (`outside_band`). Pure."""

from __future__ import annotations

from functions.shared.domain.capacity.offers import (
    BLOCKED,
    PRICE,
    QUOTA,
    Blocked,
    Candidate,
    Found,
    OutsideBand,
    Plan,
    RegionOutcome,
    Rejected,
)
from functions.shared.domain.capacity.prices import BAND_TOLERANCE, held_against, needed_band, times
from functions.shared.domain.capacity.quotas import QUOTA_COVERS, QuotaState
from functions.shared.domain.requests.job_request import DEFAULT_PRICE_BAND, JobRequest


def plan_out(
    request: JobRequest,
    candidates: list[Candidate],
    rejected: list[Rejected],
    found: list[tuple[str | None, Found]],
    left_out: dict[str, str] | None = None,
) -> Plan:
    """The plan: its candidates (the first one's outside_band said in its why; each one's region when there are
    several), its rejections, and each capacity region's outcome, with `left_out`'s (region -> why, those not weighed
    at all) and why a weighed region gave no candidate."""
    outside = outside_band(request, candidates, [b for _, own in found for b in own.blocked])
    if outside is not None:
        candidates[0].why += f"; {times(outside.ratio)} {outside.cheapest_type}, which cannot start"
    if len(found) > 1:
        for candidate in candidates:
            candidate.why = f"in {candidate.region}; {candidate.why}"
    outcomes = [_outcome(region, own) for region, own in found if region is not None]
    for outcome in outcomes:
        outcome.candidates = sum(1 for c in candidates if c.region == outcome.region)
        if outcome.candidates == 0 and outcome.left_out is None:
            outcome.left_out = "its offerings are beyond the price band of the other regions' cheaper candidates"
    outcomes += [RegionOutcome(region=region, left_out=why) for region, why in (left_out or {}).items()]
    return Plan(candidates=candidates, rejected=rejected, outside_band=outside, regions=outcomes)


def outside_band(request: JobRequest, candidates: list[Candidate], blocked: list[Blocked]) -> OutsideBand | None:
    """The first choice held against the cheapest offering of its band that fits the request, blocked or not:
    set when that one is blocked and the first choice costs more than the default price_band times it (refused
    when more than the request's price_band times it: a wider band is how a request agrees to pay that)."""
    first = candidates[0] if candidates else None
    # What the first choice adds to the bill is what is held (nothing, in a reservation with room).
    if first is None or first.hourly_usd is None or first.reservation is not None:
        return None
    same = [
        b
        for b in blocked
        if b.hourly_usd is not None and held_against(request, first.capacity, first.gpu_model, b.capacity, b.gpu_model)
    ]
    if request.max_hourly_usd is not None:
        same = [b for b in same if (b.hourly_usd or 0) <= request.max_hourly_usd]
    floor = min(same, key=lambda b: (b.hourly_usd or 0, b.instance_type), default=None)
    if floor is None or not floor.hourly_usd:
        return None
    ratio = first.hourly_usd / floor.hourly_usd
    if ratio <= min(request.price_band, DEFAULT_PRICE_BAND) + BAND_TOLERANCE:
        return None
    return OutsideBand(
        instance_type=first.instance_type,
        hourly_usd=first.hourly_usd,
        cheapest_type=floor.instance_type,
        cheapest_usd=floor.hourly_usd,
        ratio=round(ratio, 4),
        price_band=request.price_band,
        needed_band=needed_band(ratio),
        refused=ratio > request.price_band + BAND_TOLERANCE,
        blocked_by=_blocked_by([b for b in same if (b.hourly_usd or 0) < first.hourly_usd]),
    )


def _blocked_by(cheaper: list[Blocked]) -> list[str]:
    """What keeps the cheaper types from starting, in a few words each: quotas first, the smallest increase first."""
    words: list[str] = []
    quotas: dict[str, QuotaState] = {}
    for item in sorted(cheaper, key=lambda b: (b.quota_increase, b.hourly_usd or 0)):
        if item.quota is not None:
            quotas.setdefault(item.quota.code, item.quota)
    for code, quota in quotas.items():
        words.append(f"{QUOTA_COVERS.get(code, 'types')} blocked by quota {code} ({quota.vcpus:g} vCPUs)")
    by_price = sorted(cheaper, key=lambda b: b.hourly_usd or 0)
    for cause, said in (("offering", "not offered in the zones"), ("memory", "recently unavailable")):
        names = list(dict.fromkeys(b.instance_type for b in by_price if b.cause == cause))
        if names:
            more = f" and {len(names) - 2} more" if len(names) > 2 else ""
            words.append(f"{', '.join(names[:2])}{more} {said}")
    return words


def outside_band_words(outside: OutsideBand) -> str:
    """Why the first choice costs what it does: what blocks the cheaper types, and how many times more it costs."""
    where = "beyond" if outside.refused else "within"
    return (
        f"{'; '.join(outside.blocked_by)}: first choice {outside.instance_type} costs {times(outside.ratio)} "
        f"{outside.cheapest_type} (${outside.hourly_usd:.4g}/h against ${outside.cheapest_usd:.4g}/h), {where} "
        f"price_band {outside.price_band:g}"
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
