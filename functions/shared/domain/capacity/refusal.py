"""Why `POST /jobs` refuses a plan, said once for it and for `POST /plan` (which carries it as `refusal`): no candidate
(naming the request field that kept the offerings out), or a first choice beyond the price band. Pure."""

from __future__ import annotations

from functions.shared.domain.capacity.offers import Plan
from functions.shared.domain.capacity.plan import outside_band_words
from functions.shared.domain.core.errors import NoCandidate
from functions.shared.domain.requests.job_request import JobRequest

# How many rejections the message of a refusal names (all are in its `rejected`).
NAMED_REJECTIONS = 5
# The fields that leave out offerings that fit the job, those closest to running first: a price the request set, where
# it may run, then what the account or the market blocks. A refusal names the first of them that left one out (else
# what the first rejection names: the job's shape or its filters), not the field of the cheapest fix.
CLOSEST_FIRST = ("max_hourly_usd", "price_band", "zones", "regions", "reservation", "capacity")


def refusal(request: JobRequest, found: Plan, region: str) -> NoCandidate | None:
    """Why a job would not start with this plan of `request` (planned from home `region`): None when it would."""
    if not found.candidates and request.asks_reserved and not found.rejected:
        what = f"reservation {request.reservation}" if request.reservation else "Capacity Reservation"
        return NoCandidate([], "capacity", f"no {what} of the account in {region} fits the request")
    if not found.candidates:
        return NoCandidate(found.rejected, telling_field(found), rejections_summary(found))
    if found.outside_band is not None and found.outside_band.refused:
        headline = f"no GPU offering within price_band {request.price_band:g} can start"
        return NoCandidate(found.rejected, "price_band", beyond_band(found), headline=headline)
    return None


def rejections_summary(found: Plan) -> str:
    """The first rejections (the plan lists the cheapest fix first), in one line."""
    return "; ".join(f"{r.instance_type}: {r.reason}" for r in found.rejected[:NAMED_REJECTIONS])


def telling_field(found: Plan) -> str:
    """The request field that kept the offerings out ("body" when no rejection names one)."""
    fields = [r.field for r in found.rejected if r.field]
    return next((f for f in CLOSEST_FIRST if f in fields), fields[0] if fields else "body")


def beyond_band(found: Plan) -> str:
    """Why the first choice is refused, and the two ways out: the cheapest fix of what blocks the cheaper types
    (the plan's first rejection), or a wider price_band."""
    outside = found.outside_band
    assert outside is not None
    fix = next((r for r in found.rejected if r.field == "capacity" and "--quota-code" in r.reason), None)
    quota = f"; or let {fix.instance_type} start: {fix.reason.split(': ', 1)[-1]}" if fix else ""
    return f"{outside_band_words(outside)}. Send price_band {outside.needed_band:g} or more to run it{quota}"
