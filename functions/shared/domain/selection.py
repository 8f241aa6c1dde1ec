"""Pick GPU offerings for a request: what fits, on which capacity, at what price, within which quota. Pure.

The order and the explanation of the candidates are ranking.py's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from functions.shared.domain.catalog import GpuType
from functions.shared.domain.cost import PriceQuote, cheapest
from functions.shared.domain.fleet import QuotaState, vcpu_quota_code
from functions.shared.domain.memory import rejection_reason
from functions.shared.domain.offers import AvailabilitySnapshot, Candidate, MarketSignals, Plan, Rejected
from functions.shared.domain.ranking import plan_warnings, rank, signal_warnings
from functions.shared.domain.requests import JobRequest
from functions.shared.domain.vocabulary import Arch, CapacityPreference, CapacityType

# ECS and the OS keep some host memory; a job asking for all of it would never be placed.
HOST_MEMORY_RESERVE = 0.1
# Batch's ECS_AL2023_NVIDIA AMI does not support these families, and its AL2 AMIs are retired.
NO_BATCH_NVIDIA_AMI = ("p3.", "p3dn.", "g3.", "g3s.")
# How long an offering that failed (no capacity, a broken pool) is left out of selection, across executions.
UNAVAILABLE_TTL_SECONDS = 1800
# GetSpotPlacementScores: "If you specify one or two instance types, or specify variations of a single instance
# type [...], the returned placement score will always be low." Fewer types than this are never asked about.
MIN_SCORED_TYPES = 3
__all__ = [
    "AvailabilitySnapshot",
    "Candidate",
    "MarketSignals",
    "Plan",
    "Rejected",
    "offering_key",
    "placement_score_types",
    "plan",
]


def offering_key(capacity: CapacityType, instance_type: str, zone: str) -> str:
    """Key of an offering in the unavailable-offerings memory: `capacity:type:zone`."""
    return f"{capacity}:{instance_type}:{zone}"


def capacities_for(preference: CapacityPreference) -> list[CapacityType]:
    """Capacity types to try, in order."""
    if preference == CapacityPreference.SPOT:
        return [CapacityType.SPOT]
    if preference == CapacityPreference.SPOT_FIRST:
        return [CapacityType.SPOT, CapacityType.ON_DEMAND]
    return [CapacityType.ON_DEMAND]


def placement_score_types(candidates: list[Candidate], max_attempts: int) -> list[str]:
    """The spot types whose placement score to ask for, as one set: those the job would try, with the next spot
    candidates when they are fewer than three (AWS scores one or two types low whatever the capacity); none when
    fewer than three types fit at all, so that a score AWS always gives low never demotes spot."""
    spot_types = list(dict.fromkeys(c.instance_type for c in candidates if c.capacity == CapacityType.SPOT))
    tried = list(dict.fromkeys(c.instance_type for c in candidates[:max_attempts] if c.capacity == CapacityType.SPOT))
    if not tried:
        return []
    asked = tried + [t for t in spot_types if t not in tried][: max(0, MIN_SCORED_TYPES - len(tried))]
    return asked if len(asked) >= MIN_SCORED_TYPES else []


Problem = tuple[str, str]  # (the request field that rules an offering out, why)


def _filter_problem(request: JobRequest, gpu: GpuType) -> Problem | None:
    """Why the request's own type filters (arch, instance_types, gpu_models) leave `gpu` out."""
    if gpu.arch != request.arch:
        return "arch", f"{gpu.arch} instance, request is {request.arch}"
    if request.instance_types and gpu.instance_type not in request.instance_types:
        return "instance_types", "not in the request's instance_types"
    if request.gpu_models and gpu.gpu_model.lower() not in {m.lower() for m in request.gpu_models}:
        return "gpu_models", f"GPU model {gpu.gpu_model} not in the request's gpu_models"
    return None


def within_filters(request: JobRequest, gpu: GpuType) -> bool:
    """Whether the request's own type filters admit `gpu` (its rejection, if any, is then telling)."""
    return _filter_problem(request, gpu) is None


def _fit_problem(request: JobRequest, gpu: GpuType) -> Problem | None:
    problem = _filter_problem(request, gpu)
    if problem:
        return problem
    if gpu.gpus < request.gpus:
        return "gpus", f"{gpu.gpus} GPU(s), request needs {request.gpus}"
    if request.min_gpu_memory_gib and gpu.gpu_memory_gib < request.min_gpu_memory_gib:
        return "min_gpu_memory_gib", f"{gpu.gpu_memory_gib} GiB per GPU, request needs {request.min_gpu_memory_gib}"
    if request.vcpus and gpu.vcpus < request.vcpus:
        return "vcpus", f"{gpu.vcpus} vCPUs, request needs {request.vcpus}"
    usable_memory = gpu.memory_gib * (1 - HOST_MEMORY_RESERVE)
    if request.memory_gib and usable_memory < request.memory_gib:
        return "memory_gib", f"{usable_memory:.1f} GiB usable memory, request needs {request.memory_gib}"
    return None


def fits(request: JobRequest, gpu: GpuType) -> bool:
    """Whether the type's shape can run the request (before zones, prices and quotas)."""
    return _fit_problem(request, gpu) is None


def plan(
    request: JobRequest,
    catalog: Mapping[str, GpuType],
    availability: AvailabilitySnapshot,
    price_of: Callable[[str], PriceQuote | None],
    arm64_ami: bool = True,
    market: MarketSignals | None = None,
) -> Plan:
    """Every GPU offering that can run `request`, in attempt order, and every one left out with its reason.

    `price_of` gives on-demand prices; `market` the spot prices, quotas and placement scores read for this
    plan, and those that could not be read (ranked as unknown, and warned of); `arm64_ami` says whether a custom
    NVIDIA AMI for Graviton is configured (Batch ships none).
    """
    market = market or MarketSignals()
    rejected: list[Rejected] = []
    options: list[Candidate] = []
    allowed_zones = [z for z in availability.zones if not request.zones or z in request.zones]
    for instance_type in request.instance_types or []:
        if instance_type not in catalog:
            reason = "not an NVIDIA GPU instance type GPU Pilot knows (CUDA needs one)"
            rejected.append(Rejected(instance_type=instance_type, reason=reason, field="instance_types"))
    for instance_type, gpu in sorted(catalog.items()):
        problem = _type_problem(request, gpu, arm64_ami, market)
        offered_zones = [z for z in availability.offered.get(instance_type, []) if z in allowed_zones]
        if not problem and not offered_zones:
            where = ", ".join(allowed_zones) or "any zone of the request"
            problem = ("zones" if request.zones else None), f"not offered in {where}"
        if problem:
            rejected.append(Rejected(instance_type=instance_type, reason=problem[1], field=problem[0]))
            continue
        for capacity in capacities_for(request.capacity):
            option = _offering(request, gpu, capacity, offered_zones, availability, price_of, market)
            if isinstance(option, Rejected):
                rejected.append(option)
            else:
                options.append(option)
    candidates = rank(request, options)
    warnings = plan_warnings(candidates) + signal_warnings(market.unavailable)
    return Plan(candidates=candidates, rejected=rejected, warnings=warnings)


def _type_problem(
    request: JobRequest, gpu: GpuType, arm64_ami: bool, market: MarketSignals
) -> tuple[str | None, str] | None:
    problem: tuple[str | None, str] | None = _fit_problem(request, gpu)
    if not problem and gpu.instance_type.startswith(NO_BATCH_NVIDIA_AMI):
        problem = None, "no AWS Batch NVIDIA AMI supports this family (ECS_AL2023_NVIDIA excludes p3/g3)"
    if not problem and gpu.arch == Arch.ARM64 and not arm64_ami:
        problem = "arch", "Graviton GPU: AWS Batch has no NVIDIA AMI for arm64 and no custom one is configured"
    if not problem and market.max_vcpus and gpu.vcpus > market.max_vcpus:
        problem = None, f"{gpu.vcpus} vCPUs exceed the pools' maxvCpus {market.max_vcpus}: Batch would never launch it"
    return problem


def _offering(
    request: JobRequest,
    gpu: GpuType,
    capacity: CapacityType,
    offered_zones: list[str],
    availability: AvailabilitySnapshot,
    price_of: Callable[[str], PriceQuote | None],
    market: MarketSignals,
) -> Candidate | Rejected:
    """The type on one capacity type, or why not."""
    instance_type = gpu.instance_type
    zones = [z for z in offered_zones if offering_key(capacity, instance_type, z) not in availability.unavailable]
    if not zones:
        keys = {z: offering_key(capacity, instance_type, z) for z in offered_zones}
        reason = rejection_reason(capacity.value, {z: availability.remembered.get(key) for z, key in keys.items()})
        return Rejected(instance_type=instance_type, reason=reason, field="capacity")
    quote = _price(capacity, instance_type, zones, price_of, market)
    if request.max_hourly_usd is not None and quote is None:
        reason = f"no known {capacity.value} price to hold against max_hourly_usd ${request.max_hourly_usd}"
        return Rejected(instance_type=instance_type, reason=reason, field="max_hourly_usd")
    if request.max_hourly_usd is not None and quote is not None and quote.hourly_usd > request.max_hourly_usd:
        reason = f"{capacity.value} ${quote.hourly_usd}/h exceeds max_hourly_usd ${request.max_hourly_usd}"
        return Rejected(instance_type=instance_type, reason=reason, field="max_hourly_usd")
    code = vcpu_quota_code(instance_type, capacity == CapacityType.SPOT)
    # A quota not known (no published code, or Service Quotas would not say) rejects nothing.
    quota = (market.quotas or {}).get(code) if code else None
    if quota is not None and quota.vcpus < gpu.vcpus:
        return Rejected(instance_type=instance_type, reason=quota_reason(quota, gpu.vcpus, capacity), field="capacity")
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
        unavailable_zones=[z for z in offered_zones if z not in zones],
        score=0.0,
        placement_score=max((scores[z] for z in zones if z in scores), default=None),
        quota_code=code if quota is not None else None,
        quota_instances=int(quota.vcpus // gpu.vcpus) if quota is not None else None,
    )


def _price(
    capacity: CapacityType,
    instance_type: str,
    zones: list[str],
    price_of: Callable[[str], PriceQuote | None],
    market: MarketSignals,
) -> PriceQuote | None:
    """On-demand: the region's price. Spot: the lowest latest spot price among the candidate's zones."""
    if capacity == CapacityType.ON_DEMAND:
        return price_of(instance_type)
    by_zone = market.spot_prices.get(instance_type, {})
    return cheapest(by_zone[z] for z in zones if z in by_zone)


def quota_reason(quota: QuotaState, vcpus: int, capacity: CapacityType) -> str:
    """Why a quota rules a type out, and how to ask for more."""
    return (
        f"needs {vcpus} vCPUs of {capacity.value} quota {quota.code} ({quota.name}), which is {quota.vcpus:g}: "
        f"aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {quota.code} "
        f"--desired-value {max(vcpus, 2 * vcpus)}"
    )
