"""Money: an hourly price, where it came from and what it adds to the account's bill, and exact dollar amounts
(Decimal to a millionth of a cent, summed from each part's stored value). Pure.

What reserved capacity costs is said here once, for the plan, the bill and the API alike. An instance-hour of a
reservation costs the account the reservation's rate whether an instance runs in it or not: a Capacity Block's upfront
fee over its instance-hours; an On-Demand Capacity Reservation's, the on-demand price of its type (as EC2 bills it;
a block whose fee is unknown is priced so too, and says so). An attempt in it costs that rate (`usd`: what the account
pays for those instance-hours), and adds nothing to the bill while the reservation has room (`marginal_usd` 0: the
account pays for it either way). On-demand and spot add their whole price.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from pydantic import Field

from functions.shared.domain.core.clock import seconds_between
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.vocabulary import BilledCapacity, counted

SECONDS_PER_HOUR = Decimal(3600)


PLACES = Decimal("1e-12")  # kept per attempt: a millionth of a cent
# A Capacity Block's fee is not in DescribeCapacityReservations: GPU Pilot tags the blocks it buys with it, and a team
# can tag the blocks it bought elsewhere.
FEE_TAG = "gpupilot:upfront-usd"


class PriceQuote(DomainModel):
    hourly_usd: float
    pricing: str = Field(description="Where the hourly price came from")
    marginal_hourly_usd: float | None = Field(
        default=None, description="What an hour adds to the bill, where not hourly_usd: 0 in a reservation with room"
    )

    @property
    def marginal(self) -> float:
        """What an hour adds to the account's bill: the whole price, or nothing in a reservation."""
        return self.hourly_usd if self.marginal_hourly_usd is None else self.marginal_hourly_usd


def reserved_rate(
    reservation_id: str, capacity_block: bool, on_demand: PriceQuote | None, upfront_usd: float | None = None,
    instances: int = 0, hours: float | None = None,
) -> PriceQuote | None:  # fmt: skip
    """What an instance-hour of a reservation costs the account (see the module's docstring), adding nothing to the
    bill; None when no price is known (an ODCR, or a block whose fee is unknown, of a type with no on-demand price)."""
    if capacity_block and upfront_usd is not None and hours and instances:
        return PriceQuote(
            hourly_usd=round(upfront_usd / (instances * hours), 6),
            pricing=f"Capacity Block {reservation_id}: ${upfront_usd:g} up front over "
            f"{counted(instances, 'instance')} x {hours:g} h",
            marginal_hourly_usd=0.0,
        )
    if on_demand is None:
        return None
    if capacity_block:
        said = f"Capacity Block {reservation_id} (fee unknown: tag it {FEE_TAG}) at the on-demand price"
    else:
        said = f"On-Demand Capacity Reservation {reservation_id}, billed at the on-demand price"
    return PriceQuote(hourly_usd=on_demand.hourly_usd, pricing=f"{said}; {on_demand.pricing}", marginal_hourly_usd=0.0)


def billed_capacity(capacity: str, reservation: str | None, capacity_block: bool) -> BilledCapacity:
    """How an offering or an attempt is billed: in its reservation (a Capacity Block, or an ODCR: `reserved`), else
    on its capacity type."""
    if reservation is not None:
        return BilledCapacity.CAPACITY_BLOCK if capacity_block else BilledCapacity.RESERVED
    return BilledCapacity(capacity)


def time_weighted(points: list[tuple[str, float]], start: str, stop: str) -> float | None:
    """The average of a price over [start, stop] (ISO times), each point in effect until the next one.

    A point before `start` sets the price at `start` (spot price history answers the one in effect then);
    without one, the earliest point in the interval is taken as in effect from `start`. None: no point."""
    ordered = sorted(points)
    before = [p for p in ordered if p[0] <= start]
    inside = [p for p in ordered if start < p[0] < stop]
    steps = ([(start, before[-1][1])] if before else []) + inside
    if not steps:
        return None
    if not before:
        steps[0] = (start, steps[0][1])
    total = seconds_between(start, stop)
    if total <= 0:
        return steps[-1][1]
    ends = [t for t, _ in steps[1:]] + [stop]
    weighted = sum(
        dollars(price) * dollars(seconds_between(t, end)) for (t, price), end in zip(steps, ends, strict=True)
    )
    return float((weighted / dollars(total)).quantize(PLACES))


def cheapest(quotes: Iterable[PriceQuote]) -> PriceQuote | None:
    """The lowest of the quotes (a spot offering's price among its zones), or None."""
    return min(quotes, key=lambda quote: quote.hourly_usd, default=None)


def dollars(value: float | Decimal) -> Decimal:
    """A stored amount as the Decimal it was written as (a float's shortest repr, not its binary value)."""
    return value if isinstance(value, Decimal) else Decimal(repr(float(value)))


def usd_sum(values: Iterable[float | Decimal]) -> float:
    """The exact sum of amounts, as a number for the API."""
    return float(sum((dollars(v) for v in values), Decimal(0)))
