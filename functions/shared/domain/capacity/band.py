"""The price band: what a request agreed to pay, against the cheapest that could run it. Pure.

A candidate stays within `price_band` times the cheapest candidate it is held against (an on-demand one against
the cheapest on-demand one, a spot one against the cheapest of either; with `gpu_models`, within its GPU model
only). And the first choice stays within
`price_band` times the cheapest offering that fits the request whatever blocks it (a quota, the zones' offerings,
a recent shortage): past that, the cheap types are all blocked and the job would cost many times what it could.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple

from functions.shared.domain.capacity.offers import OutsideBand
from functions.shared.domain.capacity.quotas import QUOTA_COVERS, QuotaState
from functions.shared.domain.core.vocabulary import CapacityType
from functions.shared.domain.requests.job_request import DEFAULT_PRICE_BAND

if TYPE_CHECKING:
    from functions.shared.domain.capacity.offers import Candidate
    from functions.shared.domain.requests.job_request import JobRequest

# Prices are compared as floats: a ratio this close to the band is within it.
BAND_TOLERANCE = 1e-9


class Blocked(NamedTuple):
    """An offering that fits the request but cannot start now, and why: a quota, the zones' offerings, a recent
    shortage. The cheapest of them tells what the request would cost if the account allowed it."""

    instance_type: str
    capacity: CapacityType
    gpu_model: str
    hourly_usd: float | None
    cause: str  # "quota", "offering" or "memory"
    quota: QuotaState | None = None
    vcpus: int = 0

    @property
    def quota_increase(self) -> float:
        """The vCPUs its quota lacks (0 when a quota is not what blocks it)."""
        return self.vcpus - self.quota.vcpus if self.quota else 0.0


def held_against(
    request: JobRequest, capacity: CapacityType, model: str, other: CapacityType, other_model: str
) -> bool:
    """Whether an offering (capacity, model) is held against another's price: an on-demand one against on-demand
    ones (spot-first keeps its on-demand fallbacks), a spot one against both (a spot price above the band of
    what on-demand costs saves nothing); with gpu_models, only within one model (each is a preference of its own)."""
    same_model = not request.gpu_models or model.lower() == other_model.lower()
    return same_model and (capacity == CapacityType.SPOT or other == capacity)


def needed_band(ratio: float) -> float:
    """The smallest price_band (one decimal, rounded up) that allows an offering `ratio` times the cheapest."""
    return max(1.0, math.ceil(ratio * 10 - 1e-6) / 10)


def times(ratio: float) -> str:
    """A ratio in a few characters: 3.7x, 42x."""
    return f"{ratio:.1f}x" if ratio < 10 else f"{ratio:.0f}x"


def outside_band(request: JobRequest, candidates: list[Candidate], blocked: list[Blocked]) -> OutsideBand | None:
    """The first choice held against the cheapest offering of its band that fits the request, blocked or not:
    set when that one is blocked and the first choice costs more than the default price_band times it (refused
    when more than the request's price_band times it: a wider band is how a request agrees to pay that)."""
    first = candidates[0] if candidates else None
    if first is None or first.hourly_usd is None:
        return None
    same = [
        b
        for b in blocked
        if b.hourly_usd is not None and held_against(request, first.capacity, first.gpu_model, b.capacity, b.gpu_model)
    ]
    if request.max_hourly_usd is not None:
        same = [b for b in same if (b.hourly_usd or 0) <= request.max_hourly_usd]
    floor = min(same, key=lambda b: (b.hourly_usd or 0, b.instance_type), default=None)
    if floor is None or not floor.hourly_usd:
        return None
    ratio = first.hourly_usd / floor.hourly_usd
    if ratio <= min(request.price_band, DEFAULT_PRICE_BAND) + BAND_TOLERANCE:
        return None
    return OutsideBand(
        instance_type=first.instance_type,
        hourly_usd=first.hourly_usd,
        cheapest_type=floor.instance_type,
        cheapest_usd=floor.hourly_usd,
        ratio=round(ratio, 4),
        price_band=request.price_band,
        needed_band=needed_band(ratio),
        refused=ratio > request.price_band + BAND_TOLERANCE,
        blocked_by=_blocked_by([b for b in same if (b.hourly_usd or 0) < first.hourly_usd]),
    )


def _blocked_by(cheaper: list[Blocked]) -> list[str]:
    """What keeps the cheaper types from starting, in a few words each: quotas first, the smallest increase first."""
    words: list[str] = []
    quotas: dict[str, QuotaState] = {}
    for item in sorted(cheaper, key=lambda b: (b.quota_increase, b.hourly_usd or 0)):
        if item.quota is not None:
            quotas.setdefault(item.quota.code, item.quota)
    for code, quota in quotas.items():
        words.append(f"{QUOTA_COVERS.get(code, 'types')} blocked by quota {code} ({quota.vcpus:g} vCPUs)")
    by_price = sorted(cheaper, key=lambda b: b.hourly_usd or 0)
    for cause, said in (("offering", "not offered in the zones"), ("memory", "recently unavailable")):
        names = list(dict.fromkeys(b.instance_type for b in by_price if b.cause == cause))
        if names:
            more = f" and {len(names) - 2} more" if len(names) > 2 else ""
            words.append(f"{', '.join(names[:2])}{more} {said}")
    return words


def outside_band_words(outside: OutsideBand) -> str:
    """Why the first choice costs what it does: what blocks the cheaper types, and how many times more it costs."""
    where = "beyond" if outside.refused else "within"
    return (
        f"{'; '.join(outside.blocked_by)}: first choice {outside.instance_type} costs {times(outside.ratio)} "
        f"{outside.cheapest_type} (${outside.hourly_usd:.4g}/h against ${outside.cheapest_usd:.4g}/h), {where} "
        f"price_band {outside.price_band:g}"
    )
