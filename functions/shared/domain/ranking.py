"""The order in which a job tries GPU offerings, and why: scores that explain themselves, attempts that
spread across GPU families, warnings of a job likely to wait. Pure.

Score: the product of what makes an offering likely to start soon and cheap, each in (0, 1]:
price per GPU-hour against the cheapest priced candidate, zones offered (one zone is a single point of
failure), zones recently unavailable, the spot placement score, and quota headroom (instances at once).

Attempt order: the request's GPU model preference, then priced before unpriced, then score; then spread so
that consecutive attempts come from different families where there is a choice (one family's shortage,
say every g6, then costs one attempt, not all of them); `spot-first` tries each type on spot, then on
on-demand, before the next type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from functions.shared.domain.fleet import QUOTA_NAMES
from functions.shared.domain.vocabulary import CapacityType, MarketSignal

if TYPE_CHECKING:
    from functions.shared.domain.offers import SignalGap
    from functions.shared.domain.requests import JobRequest
    from functions.shared.domain.selection import Candidate

UNPRICED_FACTOR = 0.5  # an offering of unknown price is worth trying, after those whose price is known
LOW_PLACEMENT_SCORE = 3  # AWS: scores of 1-3 mean a spot request is unlikely to succeed
FEW_INSTANCES = 2
# What a plan does without a signal it could not read: the signal counts as unknown, never against an offering.
WITHOUT_SIGNAL = {
    MarketSignal.ON_DEMAND_PRICES: "on-demand prices come from the bundled price snapshot where it has the type "
    "(each candidate's pricing says)",
    MarketSignal.SPOT_PRICES: "spot offerings are ranked as unpriced",
    MarketSignal.PLACEMENT_SCORES: "spot offerings are ranked without them",
    MarketSignal.VCPU_QUOTAS: "not checked, so a type they bound may wait for quota",
}


def rank(request: JobRequest, options: list[Candidate]) -> list[Candidate]:
    """Score and explain each option, then put them in attempt order."""
    per_gpu = [c.hourly_usd / c.gpus for c in options if c.hourly_usd]
    cheapest = min(per_gpu, default=0.0)
    for candidate in options:
        candidate.score, candidate.why = _score(candidate, cheapest)
    preference = [m.lower() for m in request.gpu_models or []]

    def merit(candidate: Candidate) -> tuple[int, bool, float, float, str]:
        model_rank = preference.index(candidate.gpu_model.lower()) if preference else 0
        price = candidate.hourly_usd if candidate.hourly_usd is not None else float("inf")
        return (model_rank, candidate.hourly_usd is None, -candidate.score, price, candidate.instance_type)

    capacity_rank = {c: i for i, c in enumerate((CapacityType.SPOT, CapacityType.ON_DEMAND))}
    by_type: dict[str, list[Candidate]] = {}
    for candidate in sorted(options, key=merit):
        by_type.setdefault(candidate.instance_type, []).append(candidate)
    groups = [sorted(group, key=lambda c: capacity_rank[c.capacity]) for group in by_type.values()]
    return [candidate for group in _spread(groups) for candidate in group]


def _spread(groups: list[list[Candidate]]) -> list[list[Candidate]]:
    """Best first, but never the same family twice in a row while another family is left."""
    remaining, spread, last = list(groups), [], ""
    while remaining:
        pick = next((g for g in remaining if g[0].family != last), remaining[0])
        remaining.remove(pick)
        spread.append(pick)
        last = pick[0].family
    return spread


def _score(candidate: Candidate, cheapest_per_gpu: float) -> tuple[float, str]:
    factors: list[float] = []
    why: list[str] = []
    if candidate.hourly_usd is None:
        factors.append(UNPRICED_FACTOR)
        why.append("no known price")
    else:
        per_gpu = candidate.hourly_usd / candidate.gpus
        factors.append(cheapest_per_gpu / per_gpu if per_gpu else 1.0)
        why.append(f"${candidate.hourly_usd:.4g}/h, ${per_gpu:.4g} per GPU-hour ({candidate.pricing})")
    zones = len(candidate.zones)
    factors.append(min(1.0, zones / 2))
    why.append(f"offered in {zones} zone{'s' if zones > 1 else ''} ({', '.join(candidate.zones)})")
    if candidate.unavailable_zones:
        offered = zones + len(candidate.unavailable_zones)
        factors.append(zones / offered)
        why.append(f"recently unavailable in {', '.join(candidate.unavailable_zones)}")
    if candidate.placement_score is not None:
        factors.append(candidate.placement_score / 10)
        why.append(f"spot placement score {candidate.placement_score}/10")
    if candidate.quota_instances is not None:
        factors.append(min(1.0, candidate.quota_instances / FEW_INSTANCES))
        why.append(f"quota {candidate.quota_code} allows {candidate.quota_instances} at once")
    score = 1.0
    for factor in factors:
        score *= factor
    return round(score, 4), "; ".join(why)


def plan_warnings(candidates: list[Candidate]) -> list[str]:
    """What may keep the job waiting on its first choice, or leave it without a real fallback."""
    if not candidates:
        return []
    first, warnings = candidates[0], []
    if first.quota_instances is not None and first.quota_instances < FEW_INSTANCES:
        name = QUOTA_NAMES.get(first.quota_code or "", first.quota_code)
        warnings.append(
            f"quota {first.quota_code} ({name}) allows {first.quota_instances} {first.instance_type} at once: "
            "parallel jobs will wait for each other"
        )
    if len(first.zones) == 1:
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
    if all(c.hourly_usd is None for c in candidates):
        warnings.append("no price is known for any candidate in this region: the order cannot weigh cost")
    if len({c.family for c in candidates}) == 1 and len(candidates) > 1:
        warnings.append(f"every candidate is a {first.family}: a {first.family} shortage leaves no fallback")
    return warnings


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
