"""Step 3 of the planning walk (planning.py), the price band: what a request agreed to pay. Pure.

Each offering's price is held against the cheapest candidate it is compared with (prices.held_against: an on-demand
one against the cheapest on-demand one, a spot one against the cheapest of either; with `gpu_models`, within its GPU
model only); its `price_ratio` is what the ranking weighs, and an offering beyond `price_band` times that price is
rejected naming `price_band` and the band that would let it in. A reservation is not held against the band (the
account pays for it either way). The first choice's own band, against the cheapest offering that fits whatever blocks
it, is the plan's (plan.outside_band), since it needs the attempt order.

The band bounds unpriced types too. A type with no known price in its region (the Price List and the bundled snapshot
do not have it) is a candidate only where it is comparable to a priced candidate within the band, or where the request
allows unpriced types (`allow_unpriced`). Comparable means as many of the same GPU model (p5e.48xlarge and
p5en.48xlarge: eight H200s each): the GPUs are what an instance's price mostly pays for, so the priced one says what
the unpriced one likely costs. A priced type whose market price could not be read (spot prices AWS would not give)
is not an unpriced type: it stays a candidate, ranked as unpriced.
"""

from __future__ import annotations

from functions.shared.domain.capacity.offers import PRICE, Candidate, Rejection, rejection
from functions.shared.domain.capacity.prices import BAND_TOLERANCE, held_against, needed_band
from functions.shared.domain.requests.job_request import JobRequest


def hold(
    request: JobRequest, options: list[Candidate], priced_types: set[tuple[str | None, str]]
) -> tuple[list[Candidate], list[Rejection]]:
    """(the options within the price band, each with its price_ratio, or the priced candidate an unpriced one is
    comparable to; a rejection for each one beyond it). `priced_types`: (region, instance type) of every type with a
    known on-demand price there."""
    within, beyond, unpriced = [], [], []
    for option in options:
        if option.reservation is not None:
            within.append(option)  # paid for either way: no band holds it
            continue
        if option.hourly_usd is None:
            unpriced.append(option)
            continue
        best = _cheapest_held_against(request, option, options)
        if best is not None:
            ratio = option.hourly_usd / best if best > 0 else 1.0
            option.price_ratio = round(ratio, 4)
            if ratio > request.price_band + BAND_TOLERANCE:
                beyond.append(option)
                continue
        within.append(option)
    rejected = [_beyond_band(request, option) for option in beyond]
    priced_within = [o for o in within if o.reservation is None]
    for option in unpriced:
        like = _comparable(option, priced_within)
        if like is not None:
            option.comparable_to = like.instance_type
        if like is not None or request.allow_unpriced or (option.region, option.instance_type) in priced_types:
            within.append(option)
        else:
            rejected.append(_unpriced(request, option, _comparable(option, beyond)))
    return within, rejected


def _comparable(option: Candidate, priced: list[Candidate]) -> Candidate | None:
    """The cheapest of the priced offerings with as many of the same GPUs as the option."""
    like = [o for o in priced if o.gpus == option.gpus and o.gpu_model.lower() == option.gpu_model.lower()]
    return min(like, key=lambda o: (o.hourly_usd or 0.0, o.instance_type), default=None)


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


def _unpriced(request: JobRequest, option: Candidate, beyond: Candidate | None) -> Rejection:
    """An unpriced type no priced candidate within the band is comparable to: said with the one beyond it, if any."""
    gpus = f"{option.gpus} {option.gpu_model} GPU{'s' if option.gpus > 1 else ''}"
    if beyond is None:
        why = f"no priced candidate has as many of its GPUs ({gpus}) to bound it"
    else:
        why = f"{beyond.instance_type}, priced with as many of its GPUs ({gpus}), is beyond price_band"
    reason = f"no known {option.capacity.value} price, and {why} (allow_unpriced to try it anyway)"
    refused = rejection(PRICE, option.instance_type, reason, "allow_unpriced", 1.0, float("inf"))
    refused.rejected.region = option.region
    return refused
