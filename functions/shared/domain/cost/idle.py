"""What a job's idle GPUs cost while it runs: the price its attempt holds them at (its hourly price x its share of the
instance), kept when the job is warned of them, so that each sweep can say what its idle seconds cost so far. Pure."""

from __future__ import annotations

from pydantic import Field

from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.cost.attempts import Cost
from functions.shared.domain.cost.reclaims import priced_like


class IdleWarning(DomainModel):
    """A job warned that its GPUs idled past its idle_policy (`warn`): when, and what its GPUs cost an hour."""

    at: str = Field(description="When the host agent reported the GPUs idle past the policy's minutes")
    after_minutes: int
    gpus: int = Field(description="The job's GPUs")
    price: Cost | None = Field(
        default=None, description="The attempt's price (hourly_usd, gpu_share); null: no price was known"
    )

    def idle_usd(self, idle_seconds: float) -> float | None:
        """What `idle_seconds` of the job's GPUs cost, at its attempt's price and share (None: unpriced)."""
        return priced_like(self.price, idle_seconds) if self.price is not None else None
