"""Prices and cost: pure functions over a bundled, dated on-demand price snapshot."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from pydantic import BaseModel

from functions.shared.models import Cost

SNAPSHOT_FILE = "prices_on_demand.json"


class PriceUnknown(Exception):
    """No hourly price is known for an instance type, so its cost cannot be computed."""


class PriceQuote(BaseModel):
    hourly_usd: float
    pricing: str


@cache
def _snapshot() -> dict[str, Any]:
    return json.loads(resources.files("functions.shared.data").joinpath(SNAPSHOT_FILE).read_text())


def on_demand_price(instance_type: str) -> PriceQuote | None:
    """On-demand hourly price of `instance_type` from the bundled snapshot, or None when unknown."""
    snapshot = _snapshot()
    hourly = snapshot["prices"].get(instance_type)
    if hourly is None:
        return None
    return PriceQuote(
        hourly_usd=float(hourly),
        pricing=f"on-demand {snapshot['region']} price snapshot of {snapshot['as_of']}",
    )


def gpu_share(job_gpus: int, instance_gpus: int) -> float:
    """The share of the instance the job holds, by GPUs (a job never holds more than the whole)."""
    if instance_gpus <= 0:
        return 1.0
    return min(1.0, job_gpus / instance_gpus)


def attempt_cost(quote: PriceQuote, runtime_seconds: float, job_gpus: int, instance_gpus: int) -> Cost:
    """Cost of one attempt: hourly price x runtime x (job GPUs / instance GPUs)."""
    runtime = max(0.0, runtime_seconds)
    share = gpu_share(job_gpus, instance_gpus)
    return Cost(
        usd=round(quote.hourly_usd * runtime / 3600 * share, 10),
        hourly_usd=quote.hourly_usd,
        runtime_seconds=runtime,
        gpu_share=share,
        pricing=quote.pricing,
    )
