"""What an attempt cost: hourly price x runtime x the share of the instance it held. Pure."""

from __future__ import annotations

from pydantic import BaseModel, Field


class PriceQuote(BaseModel):
    hourly_usd: float
    pricing: str = Field(description="Where the hourly price came from")


class Cost(BaseModel):
    usd: float
    hourly_usd: float
    runtime_seconds: float
    gpu_share: float
    pricing: str = Field(description="Where the hourly price came from")


class PriceUnknown(Exception):
    """No hourly price is known for an instance type, so its cost cannot be computed."""


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
