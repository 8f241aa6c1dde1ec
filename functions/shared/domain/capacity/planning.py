"""The planning walk: how GPU Pilot turns a request and what the account says into a plan, one way, each step once.

    signals.py      signals in: what to read (the use case reads it, each signal once)
    offerings.py    each capacity region's offerings: what can run the request, what cannot and why
    band.py         the price band over them all: what the request agreed to pay
    ranking.py      those within the band, scored, explained, in attempt order
    rejections.py   every offering left out, the cheapest fix first
    plan.py         the plan out: candidates, rejections, each region's outcome, the first choice's band
    warnings.py     what may keep the job waiting, in words (the use case adds them)

The steps' rules (fit.py, quotas.py, unavailable.py, reserved.py, prices.py) and data (market.py, offers.py,
catalog.py) call no step. A spot request walks twice: a first walk, without placement scores, names the spot types
worth a score (signals.placement_score_types). Pure."""

from __future__ import annotations

from functions.shared.domain.capacity.band import hold
from functions.shared.domain.capacity.market import Signals
from functions.shared.domain.capacity.offerings import offerings
from functions.shared.domain.capacity.offers import Plan
from functions.shared.domain.capacity.plan import plan_out
from functions.shared.domain.capacity.ranking import rank
from functions.shared.domain.capacity.rejections import in_order
from functions.shared.domain.requests.job_request import JobRequest


def plan_across(request: JobRequest, regions: list[Signals], left_out: dict[str, str] | None = None) -> Plan:
    """Every GPU offering that can run `request` in the capacity regions given (each with its own signals), ranked
    together in attempt order, every one left out with its reason (the cheapest fix first), and each region's
    outcome (with `left_out`'s: region -> why, those not weighed at all). Warnings are warnings.py's."""
    found = [(signals.region, offerings(request, signals)) for signals in regions]
    priced_types = {(signals.region, instance_type) for signals in regions for instance_type in signals.on_demand}
    within, beyond_band = hold(request, [option for _, own in found for option in own.options], priced_types)
    candidates = rank(request, within)
    rejected = in_order(found, beyond_band)
    return plan_out(request, candidates, rejected, found, left_out)


def plan(request: JobRequest, signals: Signals) -> Plan:
    """plan_across in one region."""
    return plan_across(request, [signals])
