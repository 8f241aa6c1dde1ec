"""Step 2 of the planning walk (planning.py), offerings: in one capacity region, every GPU offering that can run
the request (the account's reservations first, then each fitting type on each capacity type, priced, within its
zones, its vCPU quota and the memory of unavailable offerings), every one that cannot with its reason, and those
that fit but cannot start now (what the plan's outside_band weighs). Pure."""

from __future__ import annotations

from functions.shared.domain.capacity.catalog import GpuType
from functions.shared.domain.capacity.fit import capacities_for, filter_problem, type_problem
from functions.shared.domain.capacity.market import Signals
from functions.shared.domain.capacity.offers import (
    BLOCKED,
    FILTER,
    PRICE,
    QUOTA,
    RESERVED_ABOUT,
    RESERVED_ASKED,
    SHAPE,
    UNKNOWN,
    Blocked,
    Candidate,
    Found,
    Rejection,
    rejection,
)
from functions.shared.domain.capacity.quotas import QuotaState, quota_reason, vcpu_quota_code
from functions.shared.domain.capacity.reserved import reserved_options
from functions.shared.domain.capacity.unavailable import offering_key, rejection_reason
from functions.shared.domain.core.money import PriceQuote, cheapest
from functions.shared.domain.core.vocabulary import CapacityType
from functions.shared.domain.requests.job_request import JobRequest


def offerings(request: JobRequest, signals: Signals) -> Found:
    """What can run the request in the signals' region, the account's reservations there first, and what cannot
    (each with its rejection's order)."""
    found = find_offerings(request, signals)
    reserved, refused = reserved_options(request, signals)
    kind = RESERVED_ASKED if request.asks_reserved else RESERVED_ABOUT
    rejections = [rejection(kind, r.instance_type, r.reason, r.field) for r in refused] + found.rejections
    return Found(reserved + found.options, rejections, found.blocked)


def find_offerings(request: JobRequest, signals: Signals) -> Found:
    """What can run the request on the capacity types it asks for, in the signals' region, and what cannot."""
    availability = signals.availability
    found = Found([], [], [])
    allowed_zones = [z for z in availability.zones if not request.zones or z in request.zones]
    for instance_type in request.instance_types or []:
        if instance_type in signals.sold_elsewhere:
            # EC2 does not describe the type in this region: another region of the plan sells it.
            reason = f"not offered in {signals.region}: EC2 does not sell it there"
            found.rejections.append(rejection(BLOCKED, instance_type, reason, None, float("inf")))
        elif instance_type not in signals.catalog:
            reason = "not an NVIDIA GPU instance type GPU Pilot knows (CUDA needs one)"
            found.rejections.append(rejection(UNKNOWN, instance_type, reason, "instance_types"))
    if not capacities_for(request):
        return found  # reserved capacity only
    for instance_type, gpu in sorted(signals.catalog.items()):
        problem = type_problem(request, gpu, signals.arm64_ami, signals.market.max_vcpus)
        if problem:
            kind = FILTER if filter_problem(request, gpu) else SHAPE
            found.rejections.append(rejection(kind, instance_type, problem[1], problem[0]))
            continue
        offered_zones = [z for z in availability.offered.get(instance_type, []) if z in allowed_zones]
        if not offered_zones:
            where = ", ".join(allowed_zones) or "any zone of the request"
            blocked = [_blocked(gpu, c, "offering", _any_price(c, gpu, signals)) for c in capacities_for(request)]
            price = min((b.hourly_usd for b in blocked if b.hourly_usd is not None), default=float("inf"))
            field = "zones" if request.zones else None
            found.rejections.append(rejection(BLOCKED, instance_type, f"not offered in {where}", field, price))
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
        return rejection(BLOCKED, instance_type, reason, "capacity", _price_order(quote)), blocked
    quote = _price(capacity, instance_type, zones, signals)
    if request.max_hourly_usd is not None and quote is None:
        reason = f"no known {capacity.value} price to hold against max_hourly_usd ${request.max_hourly_usd}"
        return rejection(PRICE, instance_type, reason, "max_hourly_usd", 0.0, float("inf")), None
    if request.max_hourly_usd is not None and quote is not None and quote.hourly_usd > request.max_hourly_usd:
        reason = f"{capacity.value} ${quote.hourly_usd}/h exceeds max_hourly_usd ${request.max_hourly_usd}"
        return rejection(PRICE, instance_type, reason, "max_hourly_usd", 0.0, quote.hourly_usd), None
    code = vcpu_quota_code(instance_type, capacity == CapacityType.SPOT)
    # A quota not known (no published code, or Service Quotas would not say) rejects nothing.
    quota = (market.quotas or {}).get(code) if code else None
    if quota is not None and quota.vcpus < gpu.vcpus:
        # The cheapest fix first: the smallest increase that would let the job run, then the cheapest type.
        increase, reason = gpu.vcpus - quota.vcpus, quota_reason(quota, gpu.vcpus, capacity)
        refused = rejection(QUOTA, instance_type, reason, "capacity", increase, _price_order(quote))
        return refused, _blocked(gpu, capacity, "quota", quote, quota)
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
        marginal_hourly_usd=quote.marginal if quote else None,
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
