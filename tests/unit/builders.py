"""Small builders of plain test data for the unit layer (no AWS: every value is made here)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from functions.shared.domain.capacity.catalog import GpuType
from functions.shared.domain.capacity.market import AvailabilitySnapshot, MarketSignals, Signals
from functions.shared.domain.capacity.offers import Candidate
from functions.shared.domain.core.money import PriceQuote
from functions.shared.domain.requests.job_request import JobRequest

ZONES = ["us-east-1a", "us-east-1b"]
PRICING_LABEL = "unit-test prices"


def gpu_type(instance_type: str = "g5.xlarge", **overrides: Any) -> GpuType:
    """An NVIDIA GPU type shaped like g5.xlarge unless told otherwise."""
    fields: dict[str, Any] = {
        "instance_type": instance_type,
        "gpu_model": "A10G",
        "manufacturer": "NVIDIA",
        "gpus": 1,
        "gpu_memory_gib": 24.0,
        "vcpus": 4,
        "memory_gib": 16.0,
        "arch": "x86_64",
    }
    return GpuType(**(fields | overrides))


def catalog(*types: GpuType) -> dict[str, GpuType]:
    return {t.instance_type: t for t in types}


def job_request(**overrides: Any) -> JobRequest:
    """A valid one-GPU request; overrides go through validation like an API body."""
    body: dict[str, Any] = {"name": "train", "image": "nvidia/cuda:12.4.1-base", "command": ["nvidia-smi", "-L"]}
    return JobRequest.model_validate(body | overrides)


def offered_everywhere(types: Iterable[str], zones: list[str] = ZONES, **kwargs: Any) -> AvailabilitySnapshot:
    """Availability where every type is offered in every zone."""
    return AvailabilitySnapshot(zones=zones, offered={t: list(zones) for t in types}, **kwargs)


def prices(table: dict[str, float]) -> dict[str, PriceQuote]:
    """On-demand prices from a fixed table; types absent from it have no known price."""
    return {t: PriceQuote(hourly_usd=hourly, pricing=PRICING_LABEL) for t, hourly in table.items()}


def signals(
    types: dict[str, GpuType],
    availability: AvailabilitySnapshot | None = None,
    table: dict[str, float] | None = None,
    market: MarketSignals | None = None,
    arm64_ami: bool = True,
) -> Signals:
    """What a plan weighs: the catalog, offered everywhere unless said otherwise, priced from `table`."""
    return Signals(
        catalog=types,
        availability=availability or offered_everywhere(types),
        on_demand=prices(table or {}),
        market=market or MarketSignals(),
        arm64_ami=arm64_ami,
    )


def candidate(instance_type: str = "g5.xlarge", **overrides: Any) -> Candidate:
    fields: dict[str, Any] = {
        "instance_type": instance_type,
        "gpu_model": "A10G",
        "gpus": 1,
        "gpu_memory_gib": 24.0,
        "vcpus": 4,
        "memory_gib": 16.0,
        "capacity": "on-demand",
        "hourly_usd": 1.006,
        "zones": list(ZONES),
        "score": 1.0,
    }
    return Candidate(**(fields | overrides))
