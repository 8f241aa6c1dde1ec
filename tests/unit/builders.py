"""Small builders of plain test data for the unit layer (no AWS: every value is made here)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from functions.shared.domain.catalog import GpuType
from functions.shared.domain.cost import PriceQuote
from functions.shared.domain.requests import JobRequest
from functions.shared.domain.selection import AvailabilitySnapshot, Candidate

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


def prices(table: dict[str, float]) -> Callable[[str], PriceQuote | None]:
    """A price function over a fixed table; types absent from it have no known price."""

    def price_of(instance_type: str) -> PriceQuote | None:
        hourly = table.get(instance_type)
        return None if hourly is None else PriceQuote(hourly_usd=hourly, pricing=PRICING_LABEL)

    return price_of


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
