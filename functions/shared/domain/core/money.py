"""Money: an hourly price and where it came from, and exact dollar amounts (Decimal to a millionth of a cent,
summed from each part's stored value). Pure."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from pydantic import Field

from functions.shared.domain.core.clock import seconds_between
from functions.shared.domain.core.model import DomainModel

SECONDS_PER_HOUR = Decimal(3600)


PLACES = Decimal("1e-12")  # kept per attempt: a millionth of a cent


class PriceQuote(DomainModel):
    hourly_usd: float
    pricing: str = Field(description="Where the hourly price came from")


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
