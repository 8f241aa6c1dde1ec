"""Pick GPU offerings for a request: pure ranking over snapshots of catalog, offerings and prices."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from pydantic import BaseModel, Field

from functions.shared.domain.catalog import GpuType
from functions.shared.domain.cost import PriceQuote
from functions.shared.domain.requests import JobRequest
from functions.shared.domain.vocabulary import Arch, CapacityPreference, CapacityType

# ECS and the OS keep some host memory; a job asking for all of it would never be placed.
HOST_MEMORY_RESERVE = 0.1
# Batch's ECS_AL2023_NVIDIA AMI does not support these families, and its AL2 AMIs are retired.
NO_BATCH_NVIDIA_AMI = ("p3.", "p3dn.", "g3.", "g3s.")
WORKFLOW_CANDIDATES = 8
# How long an offering that failed (no capacity, a broken pool) is left out of selection, across executions.
UNAVAILABLE_TTL_SECONDS = 1800


class AvailabilitySnapshot(BaseModel):
    """What the region offers right now, as plain data."""

    zones: list[str]
    offered: dict[str, list[str]] = Field(description="instance type -> zones that offer it")
    unavailable: set[str] = Field(default_factory=set, description="'capacity:type:zone' remembered as unavailable")


class Candidate(BaseModel):
    """A GPU offering that can run the request, with why it ranks where it does."""

    instance_type: str
    gpu_model: str
    gpus: int
    gpu_memory_gib: float
    vcpus: int
    memory_gib: float
    capacity: CapacityType
    hourly_usd: float
    zones: list[str]
    score: float


class Rejected(BaseModel):
    instance_type: str
    reason: str


class Plan(BaseModel):
    """Answer of `POST /plan`: candidates best first, and why the others were left out."""

    candidates: list[Candidate]
    rejected: list[Rejected]


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


def _filter_problem(request: JobRequest, gpu: GpuType) -> str | None:
    """Why the request's own type filters (arch, instance_types, gpu_models) leave `gpu` out."""
    if gpu.arch != request.arch:
        return f"{gpu.arch} instance, request is {request.arch}"
    if request.instance_types and gpu.instance_type not in request.instance_types:
        return "not in the request's instance_types"
    if request.gpu_models and gpu.gpu_model.lower() not in {m.lower() for m in request.gpu_models}:
        return f"GPU model {gpu.gpu_model} not in the request's gpu_models"
    return None


def within_filters(request: JobRequest, gpu: GpuType) -> bool:
    """Whether the request's own type filters admit `gpu` (its rejection, if any, is then telling)."""
    return _filter_problem(request, gpu) is None


def _fit_problem(request: JobRequest, gpu: GpuType) -> str | None:
    problem = _filter_problem(request, gpu)
    if problem:
        return problem
    if gpu.gpus < request.gpus:
        return f"{gpu.gpus} GPU(s), request needs {request.gpus}"
    if request.min_gpu_memory_gib and gpu.gpu_memory_gib < request.min_gpu_memory_gib:
        return f"{gpu.gpu_memory_gib} GiB per GPU, request needs {request.min_gpu_memory_gib}"
    if request.vcpus and gpu.vcpus < request.vcpus:
        return f"{gpu.vcpus} vCPUs, request needs {request.vcpus}"
    usable_memory = gpu.memory_gib * (1 - HOST_MEMORY_RESERVE)
    if request.memory_gib and usable_memory < request.memory_gib:
        return f"{usable_memory:.1f} GiB usable memory, request needs {request.memory_gib}"
    return None


def _model_rank(request: JobRequest, gpu: GpuType) -> int:
    if not request.gpu_models:
        return 0
    order = [m.lower() for m in request.gpu_models]
    return order.index(gpu.gpu_model.lower())


def plan(
    request: JobRequest,
    catalog: Mapping[str, GpuType],
    availability: AvailabilitySnapshot,
    price_of: Callable[[str], PriceQuote | None],
    arm64_ami: bool = True,
) -> Plan:
    """Every GPU offering that can run `request`, best first, and every type left out with its reason.

    Order: the request's capacity preference, then its GPU model preference, then hourly price.
    `arm64_ami` says whether a custom NVIDIA AMI for Graviton is configured (Batch ships none).
    """
    rejected: list[Rejected] = []
    ranked: list[tuple[tuple[int, int, float, str], Candidate]] = []
    capacities = capacities_for(request.capacity)
    for instance_type, gpu in sorted(catalog.items()):
        problem = _fit_problem(request, gpu)
        if not problem and gpu.instance_type.startswith(NO_BATCH_NVIDIA_AMI):
            problem = "no AWS Batch NVIDIA AMI supports this family (ECS_AL2023_NVIDIA excludes p3/g3)"
        if not problem and gpu.arch == Arch.ARM64 and not arm64_ami:
            problem = "Graviton GPU: AWS Batch has no NVIDIA AMI for arm64 and no custom one is configured"
        if problem:
            rejected.append(Rejected(instance_type=instance_type, reason=problem))
            continue
        quote = price_of(instance_type)
        if quote is None:
            rejected.append(Rejected(instance_type=instance_type, reason="no known hourly price"))
            continue
        if request.max_hourly_usd is not None and quote.hourly_usd > request.max_hourly_usd:
            rejected.append(
                Rejected(
                    instance_type=instance_type,
                    reason=f"${quote.hourly_usd}/h exceeds max_hourly_usd ${request.max_hourly_usd}",
                )
            )
            continue
        offered_zones = [z for z in availability.offered.get(instance_type, []) if z in availability.zones]
        if not offered_zones:
            rejected.append(
                Rejected(instance_type=instance_type, reason=f"not offered in {', '.join(availability.zones)}")
            )
            continue
        for capacity_rank, capacity in enumerate(capacities):
            zones = [
                z for z in offered_zones if offering_key(capacity, instance_type, z) not in availability.unavailable
            ]
            if not zones:
                rejected.append(
                    Rejected(
                        instance_type=instance_type,
                        reason=f"{capacity.value} capacity recently unavailable in {', '.join(offered_zones)}",
                    )
                )
                continue
            candidate = Candidate(
                instance_type=instance_type,
                gpu_model=gpu.gpu_model,
                gpus=gpu.gpus,
                gpu_memory_gib=gpu.gpu_memory_gib,
                vcpus=gpu.vcpus,
                memory_gib=gpu.memory_gib,
                capacity=capacity,
                hourly_usd=quote.hourly_usd,
                zones=zones,
                score=0.0,
            )
            key = (capacity_rank, _model_rank(request, gpu), quote.hourly_usd, instance_type)
            ranked.append((key, candidate))
    ranked.sort(key=lambda item: item[0])
    candidates = [candidate for _, candidate in ranked]
    # 1.0 for the best; never higher than the candidate before it; lower for dearer offerings.
    top_price = candidates[0].hourly_usd if candidates else 0.0
    previous = 1.0
    for position, candidate in enumerate(candidates):
        price_factor = min(1.0, top_price / candidate.hourly_usd) if candidate.hourly_usd else 1.0
        previous = min(previous, round(price_factor / (1 + position * 0.1), 4))
        candidate.score = previous
    return Plan(candidates=candidates, rejected=rejected)
