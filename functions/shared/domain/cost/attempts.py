"""What an attempt cost: hourly price x runtime x the share of the instance it held, and what it added to the bill
(the same, at its marginal price: nothing in a reservation with room, core/money.py). Pure.

The share is the largest of the job's GPU, vCPU and memory fractions of the instance: what it kept others
from using (one GPU with 192 vCPUs of a g6.48xlarge holds the whole instance, not an eighth). Money is
computed in Decimal and summed in Decimal from each part's stored value, so a total is the sum of its
parts to the last digit; only the API's JSON turns it into a number.
"""

from __future__ import annotations

from pydantic import Field

from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.money import PLACES, SECONDS_PER_HOUR, PriceQuote, billed_capacity, dollars, usd_sum
from functions.shared.domain.core.vocabulary import BilledCapacity, CapacityType
from functions.shared.domain.reservations.reservation import Reservation


class Cost(DomainModel):
    usd: float
    hourly_usd: float
    runtime_seconds: float
    gpu_share: float = Field(description="Share of the instance the job held: its largest of GPU, vCPU, memory")
    share_by: str = Field(default="gpus", description="Which of gpus, vcpus or memory set the share")
    pricing: str = Field(description="Where the hourly price came from")
    instance_usd: float | None = Field(
        default=None,
        description="What the whole instance cost meanwhile (hourly_usd x runtime): the share no job held is waste "
        "(unused_share)",
    )
    marginal_usd: float | None = Field(
        default=None,
        description="What it added to the bill: usd, or 0 in a reservation with room (the account pays for that "
        "either way); null: not known (priced before GPU Pilot said)",
    )
    marginal_hourly_usd: float | None = Field(
        default=None, description="What an hour of it added to the bill: hourly_usd, or 0 in a reservation"
    )


class PriceUnknown(Exception):
    """No hourly price is known for an instance type, so its cost cannot be computed."""


def gpu_share(job_gpus: int, instance_gpus: int) -> float:
    """The share of the instance the job holds, by GPUs (a job never holds more than the whole)."""
    if instance_gpus <= 0:
        return 1.0
    return min(1.0, job_gpus / instance_gpus)


def instance_share(held: dict[str, float], instance: dict[str, float]) -> tuple[float, str]:
    """(share, by what): the largest fraction of the instance's gpus, vcpus and memory the job held."""
    fractions = {
        k: (held[k] / instance[k] if instance.get(k) else 1.0) for k in ("gpus", "vcpus", "memory") if k in held
    }
    by = max(fractions, key=lambda k: (fractions[k], k == "gpus"))
    return min(1.0, fractions[by]), by


def attempt_cost(
    quote: PriceQuote, runtime_seconds: float, job_gpus: int = 1, instance_gpus: int = 1,
    share: tuple[float, str] | None = None,
) -> Cost:  # fmt: skip
    """Cost of one attempt: hourly price x runtime x share (by default, job GPUs / instance GPUs)."""
    runtime = max(0.0, runtime_seconds)
    fraction, by = share or (gpu_share(job_gpus, instance_gpus), "gpus")
    whole = dollars(quote.hourly_usd) * dollars(runtime) / SECONDS_PER_HOUR
    added = dollars(quote.marginal) * dollars(runtime) / SECONDS_PER_HOUR * dollars(fraction)
    return Cost(
        usd=float((whole * dollars(fraction)).quantize(PLACES)),
        hourly_usd=quote.hourly_usd,
        runtime_seconds=runtime,
        gpu_share=fraction,
        share_by=by,
        pricing=quote.pricing,
        instance_usd=float(whole.quantize(PLACES)),
        marginal_usd=float(added.quantize(PLACES)),
        marginal_hourly_usd=quote.marginal,
    )


def billed(cost: Cost, reservation: str | None) -> Cost:
    """The cost with what it added to the bill said: as priced, or (priced before that was) nothing in a reservation
    and the whole of it elsewhere."""
    if cost.marginal_usd is not None:
        return cost
    in_reservation = reservation is not None
    return cost.model_copy(
        update={
            "marginal_usd": 0.0 if in_reservation else cost.usd,
            "marginal_hourly_usd": 0.0 if in_reservation else cost.hourly_usd,
        }
    )


def capacity_type(capacity: CapacityType, reservation: str | None, reserved: Reservation | None) -> BilledCapacity:
    """How an attempt was billed: in its reservation (capacity-block, or reserved for an ODCR), or its capacity type."""
    return billed_capacity(capacity, reservation, reserved is not None and reserved.capacity_block)


def total_cost(costs: list[Cost]) -> Cost | None:
    """A job's cost: the exact sum of its attempts' (the last attempt's price, share and source shown)."""
    if not costs:
        return None
    last = costs[-1]
    pricing = last.pricing if len(costs) == 1 else f"{len(costs)} attempts; last: {last.pricing}"
    known = [c.instance_usd for c in costs if c.instance_usd is not None]
    added = [c.marginal_usd for c in costs if c.marginal_usd is not None]
    return last.model_copy(
        update={
            "usd": usd_sum(c.usd for c in costs),
            "runtime_seconds": float(sum(dollars(c.runtime_seconds) for c in costs)),
            "pricing": pricing,
            "instance_usd": usd_sum(known) if len(known) == len(costs) else None,
            "marginal_usd": usd_sum(added) if len(added) == len(costs) else None,
        }
    )
