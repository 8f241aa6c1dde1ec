"""Step 3 of the planning walk (planning.py), the price band: what a request agreed to pay. Pure.

Each offering's price is held against the cheapest candidate it is compared with (prices.held_against: an on-demand
one against the cheapest on-demand one, a spot one against the cheapest of either; with `gpu_models`, within its GPU
model only); its `price_ratio` is what the ranking weighs, and an offering beyond `price_band` times that price is
rejected naming `price_band` and the band that would let it in. An offering of unknown price, or a reservation (the
account pays for it either way), is not held against the band. The first choice's own band, against the cheapest
offering that fits whatever blocks it, is the plan's (plan.outside_band), since it needs the attempt order.
"""

from __future__ import annotations

from functions.shared.domain.capacity.offers import PRICE, Candidate, Rejection, rejection
from functions.shared.domain.capacity.prices import BAND_TOLERANCE, held_against, needed_band
from functions.shared.domain.requests.job_request import JobRequest


def hold(request: JobRequest, options: list[Candidate]) -> tuple[list[Candidate], list[Rejection]]:
    """(the options within the price band, each with its price_ratio; a rejection for each one beyond it)."""
    within, beyond = [], []
    for option in options:
        if option.reservation is not None:
            within.append(option)  # paid for either way: no band holds it
            continue
        best = _cheapest_held_against(request, option, options)
        if option.hourly_usd is not None and best is not None:
            ratio = option.hourly_usd / best if best > 0 else 1.0
            option.price_ratio = round(ratio, 4)
            if ratio > request.price_band + BAND_TOLERANCE:
                beyond.append(option)
                continue
        within.append(option)
    return within, [_beyond_band(request, option) for option in beyond]


def _cheapest_held_against(request: JobRequest, option: Candidate, options: list[Candidate]) -> float | None:
    """The price the option's own is held against: the cheapest of the priced options it is compared with."""
    prices = [
        o.hourly_usd
        for o in options
        if o.hourly_usd is not None
        and o.reservation is None
        and held_against(request, option.capacity, option.gpu_model, o.capacity, o.gpu_model)
    ]
    return min(prices, default=None)


def _beyond_band(request: JobRequest, option: Candidate) -> Rejection:
    ratio = option.price_ratio or 1.0
    reason = (
        f"{option.capacity.value} ${option.hourly_usd:.4g}/h is {ratio:.1f}x the cheapest candidate, beyond price_band "
        f"{request.price_band:g} (widen it to {needed_band(ratio):g} to try it)"
    )
    return rejection(PRICE, option.instance_type, reason, "price_band", 1.0, option.hourly_usd or 0.0)
