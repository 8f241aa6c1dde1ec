"""What spot reclaims cost a job, and what resuming from a checkpoint saved it: the job's cost's `reclaims`. Pure.

A reclaim takes the work an attempt did since its last checkpoint (its `progress_lost_seconds`, the host agent's
figure); an attempt that resumed from that checkpoint did not redo the work before it. Both are priced as the
interrupted attempt was: its hourly price x the share of the instance it held (domain/cost/attempts.py).
"""

from __future__ import annotations

from pydantic import Field

from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.money import PriceQuote
from functions.shared.domain.cost.attempts import Cost, attempt_cost


class ReclaimCost(DomainModel):
    count: int = Field(description="Attempts EC2 gave a spot interruption notice (reclaims)")
    lost_seconds: float = Field(description="Work the reclaims took: each one's progress_lost_seconds, summed")
    lost_usd: float = Field(description="What that work cost, priced as each interrupted attempt was")
    saved_seconds: float = Field(
        description="Work a resumed attempt did not redo: each interrupted attempt's, up to its checkpoint"
    )
    saved_by_resume_usd: float = Field(description="What that work cost, priced as each interrupted attempt was")


class JobCost(Cost):
    """A job's cost: the sum of its attempts', and what its reclaims cost (null: none was reclaimed)."""

    reclaims: ReclaimCost | None = None


def priced_like(cost: Cost, seconds: float) -> float:
    """`seconds` of an attempt's time at its hourly price and share of the instance (USD)."""
    quote = PriceQuote(hourly_usd=cost.hourly_usd, pricing=cost.pricing)
    return attempt_cost(quote, seconds, share=(cost.gpu_share, cost.share_by)).usd
