"""Pick GPU offerings for a request: what fits, on which capacity, at what price, within which quota, in what
order. Pure, and one way: signals in (`Signals`: the catalog, what the deployment's zones offer and the memory of
unavailable offerings, prices, quotas, spot signals), candidates in attempt order and rejections out (the cheapest
fix first). ranking.py orders and explains the candidates; it imports nothing of this module.
"""

from __future__ import annotations

from typing import NamedTuple

from functions.shared.domain.capacity.band import Blocked, needed_band, outside_band, times
from functions.shared.domain.capacity.catalog import GpuType
from functions.shared.domain.capacity.fit import HOST_MEMORY_RESERVE, filter_problem, fit_problem, fits, type_problem
from functions.shared.domain.capacity.offers import (
    AvailabilitySnapshot,
    Candidate,
    MarketSignals,
    Plan,
    Rejected,
    SignalNeeds,
    Signals,
)
from functions.shared.domain.capacity.quotas import QuotaState, vcpu_quota_code
from functions.shared.domain.capacity.ranking import rank
from functions.shared.domain.capacity.reserved import capacities_for, reserved_options
from functions.shared.domain.capacity.unavailable import offering_key, rejection_reason
from functions.shared.domain.core.money import PriceQuote, cheapest
from functions.shared.domain.core.vocabulary import CapacityType
from functions.shared.domain.requests.job_request import JobRequest

# How long an offering that failed (no capacity, a broken pool) is left out of selection, across executions.
UNAVAILABLE_TTL_SECONDS = 1800
# GetSpotPlacementScores: "If you specify one or two instance types, or specify variations of a single instance
# type [...], the returned placement score will always be low." Fewer types than this are never asked about.
MIN_SCORED_TYPES = 3
__all__ = [
    "HOST_MEMORY_RESERVE",
    "AvailabilitySnapshot",
    "Candidate",
    "MarketSignals",
    "Plan",
    "Rejected",
    "Signals",
    "fits",
    "offering_key",
    "placement_score_types",
    "plan",
    "signal_needs",
]


def signal_needs(request: JobRequest, catalog: dict[str, GpuType]) -> SignalNeeds:
    """What a plan for `request` needs read: the types its shape fits, the capacity types, their vCPU quotas."""
    fitting = sorted(t for t, gpu in catalog.items() if fit_problem(request, gpu) is None)
    capacities = capacities_for(request)
    codes = {vcpu_quota_code(t, capacity == CapacityType.SPOT) for t in fitting for capacity in capacities}
    return SignalNeeds(fitting=fitting, capacities=capacities, quota_codes=sorted(c for c in codes if c))


def placement_score_types(request: JobRequest, signals: Signals) -> list[str]:
    """The spot types whose placement score to ask for, as one set: those the job would try (ranked without
    scores), with the next spot candidates when they are fewer than three (AWS scores one or two types low whatever
    the capacity); none when fewer than three types could be asked about, so that a score AWS always gives low
    never demotes spot."""
    if CapacityType.SPOT not in capacities_for(request):
        return []
    unscored = signals.model_copy(update={"market": signals.market.model_copy(update={"placement_scores": {}})})
    candidates = plan(request, unscored).candidates
    spot_types = list(dict.fromkeys(c.instance_type for c in candidates if c.capacity == CapacityType.SPOT))
    tried = list(
        dict.fromkeys(c.instance_type for c in candidates[: request.max_attempts] if c.capacity == CapacityType.SPOT)
    )
    if not tried:
        return []
    asked = tried + [t for t in spot_types if t not in tried][: max(0, MIN_SCORED_TYPES - len(tried))]
    return asked if len(asked) >= MIN_SCORED_TYPES else []


# -- what can run ------------------------------------------------------------------------------------------------
class Rejection(NamedTuple):
    order: tuple[int, float, float, str]  # (kind, the size of its fix or its price, its price, its type)
    rejected: Rejected


# The order rejections are listed in: the cheapest fix first (the smallest quota increase that lets the job run),
# then what the request named wrong, what the zones' offerings or a shortage block, what the price rules out, what
# could never run the request, and last what the request's own filters left out. Reservations asked for come first.
RESERVED_ASKED = -1
QUOTA, UNKNOWN, BLOCKED, PRICE, SHAPE, FILTER, RESERVED_ABOUT = range(7)


class Found(NamedTuple):
    options: list[Candidate]
    rejections: list[Rejection]
    blocked: list[Blocked]


def plan(request: JobRequest, signals: Signals) -> Plan:
    """Every GPU offering that can run `request`, in attempt order, and every one left out with its reason (the
    cheapest fix first); `outside_band` when the cheaper types that fit are all blocked and the first choice costs
    more than price_band times the cheapest of them. Warnings are the caller's (ranking.plan_warnings)."""
    found = offerings_and_reservations(request, signals)
    candidates, beyond = rank(request, found.options)
    rejections = found.rejections + [beyond_band(request, option) for option in beyond]
    outside = outside_band(request, candidates, found.blocked)
    if outside is not None:
        candidates[0].why += f"; {times(outside.ratio)} {outside.cheapest_type}, which cannot start"
    return Plan(
        candidates=candidates,
        rejected=[r.rejected for r in sorted(rejections, key=lambda r: r.order)],
        outside_band=outside,
    )


def offerings_and_reservations(request: JobRequest, signals: Signals) -> Found:
    """find_offerings, with the account's reservations in the signals' region that can run the request first, and
    those that cannot among the rejections."""
    found = find_offerings(request, signals)
    reserved, refused = reserved_options(request, signals)
    kind = RESERVED_ASKED if request.asks_reserved else RESERVED_ABOUT
    rejections = [_reject(kind, r.instance_type, r.reason, r.field) for r in refused] + found.rejections
    return Found(reserved + found.options, rejections, found.blocked)


def find_offerings(request: JobRequest, signals: Signals) -> Found:
    """What can run the request in the signals' region, and what cannot (each with its rejection's order)."""
    availability, market = signals.availability, signals.market
    found = Found([], [], [])
    allowed_zones = [z for z in availability.zones if not request.zones or z in request.zones]
    for instance_type in request.instance_types or []:
        if instance_type not in signals.catalog:
            reason = "not an NVIDIA GPU instance type GPU Pilot knows (CUDA needs one)"
            found.rejections.append(_reject(UNKNOWN, instance_type, reason, "instance_types"))
    if not capacities_for(request):
        return found  # reserved capacity only
    for instance_type, gpu in sorted(signals.catalog.items()):
        problem = type_problem(request, gpu, signals.arm64_ami, market.max_vcpus)
        if problem:
            kind = FILTER if filter_problem(request, gpu) else SHAPE
            found.rejections.append(_reject(kind, instance_type, problem[1], problem[0]))
            continue
        offered_zones = [z for z in availability.offered.get(instance_type, []) if z in allowed_zones]
        if not offered_zones:
            where = ", ".join(allowed_zones) or "any zone of the request"
            blocked = [_blocked(gpu, c, "offering", _any_price(c, gpu, signals)) for c in capacities_for(request)]
            price = min((b.hourly_usd for b in blocked if b.hourly_usd is not None), default=float("inf"))
            field = "zones" if request.zones else None
            found.rejections.append(_reject(BLOCKED, instance_type, f"not offered in {where}", field, price))
            found.blocked.extend(blocked)
            continue
        for capacity in capacities_for(request):
            option = _offering(request, gpu, capacity, offered_zones, signals)
            if isinstance(option, Candidate):
                found.options.append(option)
            else:
                found.rejections.append(option[0])
                if option[1] is not None:
                    found.blocked.append(option[1])
    return found


def _reject(
    kind: int, instance_type: str, reason: str, field: str | None, first: float = 0.0, second: float = 0.0
) -> Rejection:
    return Rejection((kind, first, second, instance_type), Rejected(instance_type=instance_type, reason=reason,
                                                                     field=field))  # fmt: skip


def _blocked(
    gpu: GpuType, capacity: CapacityType, cause: str, quote: PriceQuote | None, quota: QuotaState | None = None
) -> Blocked:
    hourly = quote.hourly_usd if quote else None
    return Blocked(gpu.instance_type, capacity, gpu.gpu_model, hourly, cause, quota, gpu.vcpus)


def _offering(
    request: JobRequest, gpu: GpuType, capacity: CapacityType, offered_zones: list[str], signals: Signals
) -> Candidate | tuple[Rejection, Blocked | None]:
    """The type on one capacity type, or why not (and, when it is blocked rather than ruled out, by what)."""
    instance_type, availability, market = gpu.instance_type, signals.availability, signals.market
    unavailable, region = availability.unavailable, signals.region
    zones = [z for z in offered_zones if offering_key(capacity, instance_type, z, region) not in unavailable]
    if not zones:
        keys = {z: offering_key(capacity, instance_type, z, region) for z in offered_zones}
        reason = rejection_reason(capacity.value, {z: availability.remembered.get(key) for z, key in keys.items()})
        quote = _price(capacity, instance_type, offered_zones, signals)
        blocked = _blocked(gpu, capacity, "memory", quote)
        return _reject(BLOCKED, instance_type, reason, "capacity", _price_order(quote)), blocked
    quote = _price(capacity, instance_type, zones, signals)
    if request.max_hourly_usd is not None and quote is None:
        reason = f"no known {capacity.value} price to hold against max_hourly_usd ${request.max_hourly_usd}"
        return _reject(PRICE, instance_type, reason, "max_hourly_usd", 0.0, float("inf")), None
    if request.max_hourly_usd is not None and quote is not None and quote.hourly_usd > request.max_hourly_usd:
        reason = f"{capacity.value} ${quote.hourly_usd}/h exceeds max_hourly_usd ${request.max_hourly_usd}"
        return _reject(PRICE, instance_type, reason, "max_hourly_usd", 0.0, quote.hourly_usd), None
    code = vcpu_quota_code(instance_type, capacity == CapacityType.SPOT)
    # A quota not known (no published code, or Service Quotas would not say) rejects nothing.
    quota = (market.quotas or {}).get(code) if code else None
    if quota is not None and quota.vcpus < gpu.vcpus:
        # The cheapest fix first: the smallest increase that would let the job run, then the cheapest type.
        increase, reason = gpu.vcpus - quota.vcpus, quota_reason(quota, gpu.vcpus, capacity)
        rejection = _reject(QUOTA, instance_type, reason, "capacity", increase, _price_order(quote))
        return rejection, _blocked(gpu, capacity, "quota", quote, quota)
    scores = market.placement_scores.get(instance_type, {}) if capacity == CapacityType.SPOT else {}
    return Candidate(
        instance_type=instance_type,
        gpu_model=gpu.gpu_model,
        gpus=gpu.gpus,
        gpu_memory_gib=gpu.gpu_memory_gib,
        vcpus=gpu.vcpus,
        memory_gib=gpu.memory_gib,
        capacity=capacity,
        hourly_usd=quote.hourly_usd if quote else None,
        pricing=quote.pricing if quote else None,
        zones=zones,
        region=region,
        unavailable_zones=[z for z in offered_zones if z not in zones],
        score=0.0,
        placement_score=max((scores[z] for z in zones if z in scores), default=None),
        quota_code=code if quota is not None else None,
        quota_instances=int(quota.vcpus // gpu.vcpus) if quota is not None else None,
    )


def _price_order(quote: PriceQuote | None) -> float:
    return quote.hourly_usd if quote else float("inf")


def _price(capacity: CapacityType, instance_type: str, zones: list[str], signals: Signals) -> PriceQuote | None:
    """On-demand: the region's price. Spot: the lowest latest spot price among the candidate's zones."""
    if capacity == CapacityType.ON_DEMAND:
        return signals.on_demand.get(instance_type)
    by_zone = signals.market.spot_prices.get(instance_type, {})
    return cheapest(by_zone[z] for z in zones if z in by_zone)


def _any_price(capacity: CapacityType, gpu: GpuType, signals: Signals) -> PriceQuote | None:
    """What the type would cost on that capacity type, whichever zone it ran in (a type not offered here)."""
    if capacity == CapacityType.ON_DEMAND:
        return signals.on_demand.get(gpu.instance_type)
    return cheapest(signals.market.spot_prices.get(gpu.instance_type, {}).values())


def quota_reason(quota: QuotaState, vcpus: int, capacity: CapacityType) -> str:
    """Why a quota rules a type out, and how to ask for more."""
    return (
        f"needs {vcpus} vCPUs of {capacity.value} quota {quota.code} ({quota.name}), which is {quota.vcpus:g}: "
        f"aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {quota.code} "
        f"--desired-value {max(vcpus, 2 * vcpus)}"
    )


# -- the price band ------------------------------------------------------------------------------------------------
def beyond_band(request: JobRequest, option: Candidate) -> Rejection:
    ratio = option.price_ratio or 1.0
    reason = (
        f"{option.capacity.value} ${option.hourly_usd:.4g}/h is {ratio:.1f}x the cheapest candidate, beyond price_band "
        f"{request.price_band:g} (widen it to {needed_band(ratio):g} to try it)"
    )
    return _reject(PRICE, option.instance_type, reason, "price_band", 1.0, option.hourly_usd or 0.0)
