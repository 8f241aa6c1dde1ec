"""Step 7 of the planning walk (planning.py), its last words: what may keep a job waiting on its first choice, cost
more than the types it fits, or leave it without a real fallback, and each market signal the plan could not read.
Pure."""

from __future__ import annotations

from typing import TYPE_CHECKING

from functions.shared.domain.capacity.plan import outside_band_words
from functions.shared.domain.capacity.quotas import QUOTA_NAMES
from functions.shared.domain.capacity.ranking import FEW_INSTANCES
from functions.shared.domain.core.vocabulary import MarketSignal
from functions.shared.domain.reservations.reservation import SCHEDULED, waiting_words

if TYPE_CHECKING:
    from functions.shared.domain.capacity.market import SignalGap
    from functions.shared.domain.capacity.offers import Plan
    from functions.shared.domain.requests.job_request import JobRequest

LOW_PLACEMENT_SCORE = 3  # AWS: scores of 1-3 mean a spot request is unlikely to succeed


# What a plan does without a signal it could not read: the signal counts as unknown, never against an offering.
WITHOUT_SIGNAL = {
    MarketSignal.ON_DEMAND_PRICES: "on-demand prices come from the bundled price snapshot where it has the type "
    "(each candidate's pricing says)",
    MarketSignal.SPOT_PRICES: "spot offerings are ranked as unpriced",
    MarketSignal.PLACEMENT_SCORES: "spot offerings are ranked without them",
    MarketSignal.VCPU_QUOTAS: "not checked, so a type they bound may wait for quota",
    MarketSignal.RESERVATIONS: "the account's reservations are not used",
}


def plan_warnings(plan: Plan, request: JobRequest) -> list[str]:
    """What may keep the job waiting on its first choice, cost more than the types it fits, or leave it without a
    real fallback; the loudest first."""
    candidates = plan.candidates
    if not candidates:
        return []
    first, warnings = candidates[0], []
    if first.reserved is not None and first.reserved.state == SCHEDULED:
        warnings.append(f"the job starts by {waiting_words(first.reserved)}")
    if plan.outside_band is not None:
        outside = plan.outside_band
        allowed = f"POST /jobs refuses it unless price_band is at least {outside.needed_band:g}"
        warnings.append(f"{outside_band_words(outside)}: {allowed if outside.refused else 'this job pays that'}")
    if first.quota_instances is not None and first.quota_instances < FEW_INSTANCES:
        name = QUOTA_NAMES.get(first.quota_code or "", first.quota_code)
        warnings.append(
            f"quota {first.quota_code} ({name}) allows {first.quota_instances} {first.instance_type} at once: "
            "parallel jobs will wait for each other"
        )
    if len(first.zones) == 1 and first.reservation is None:  # a reservation is in one zone by nature
        warnings.append(
            f"{first.instance_type} is offered in one zone only ({first.zones[0]}): a shortage there stops it"
        )
    if first.placement_score is not None and first.placement_score <= LOW_PLACEMENT_SCORE:
        warnings.append(
            f"spot placement score {first.placement_score}/10 for {first.instance_type}: spot capacity is unlikely"
        )
    if first.unavailable_zones:
        warnings.append(
            f"{first.capacity.value} {first.instance_type} was recently unavailable in "
            f"{', '.join(first.unavailable_zones)}: those zones are skipped for now"
        )
    unknown = [c for c in candidates if c.hourly_usd is None and c.reservation is None]
    unpriced = list(dict.fromkeys(c.instance_type for c in unknown))
    if len(unknown) == len(candidates):
        warnings.append("no price is known for any candidate in this region: the order cannot weigh cost")
    elif unpriced:
        bounded = all(c.comparable_to for c in unknown)
        why = (
            "each has as many of the same GPUs as a priced candidate within price_band"
            if bounded
            else "no price_band bounds what they cost"
        )
        warnings.append(f"no known price for {_some(unpriced)}: tried after every priced candidate; {why}")
    if len({c.family for c in candidates}) == 1 and len(candidates) > 1:
        beyond = [r.instance_type for r in plan.rejected if r.field == "price_band"]
        widen = f" (price_band {request.price_band:g} leaves out {_some(beyond)})" if beyond else ""
        warnings.append(f"every candidate is a {first.family}: a {first.family} shortage leaves no fallback{widen}")
    return warnings


def _some(names: list[str], shown: int = 2) -> str:
    """A few names, and how many more."""
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def signal_warnings(gaps: list[SignalGap]) -> list[str]:
    """One warning per market signal this plan could not read and AWS error: the signal, the call, the error
    code, and what the plan did without it."""
    grouped: dict[tuple[MarketSignal, str, str], list[str]] = {}
    for gap in gaps:
        subjects = grouped.setdefault((gap.signal, gap.operation, gap.code), [])
        if gap.subject and gap.subject not in subjects:
            subjects.append(gap.subject)
    return [
        f"{signal.value}{' ' + ', '.join(subjects) if subjects else ''} could not be read ({operation}: {code}): "
        f"{WITHOUT_SIGNAL[signal]}"
        for (signal, operation, code), subjects in grouped.items()
    ]
