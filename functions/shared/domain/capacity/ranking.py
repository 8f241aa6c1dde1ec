"""Step 4 of the planning walk (planning.py), the ranking: the order in which a job tries the GPU offerings within
its price band (band.py), and why: what the account pays, scores that explain themselves, attempts that spread across
GPU families. Pure.

Price: what the account pays for the instance the job would start, alone on it (`hourly_usd`), never per GPU: a
1-GPU job on an 8-GPU p4d.24xlarge pays for all eight; its price_ratio is the band's.

Score: the product of what makes an offering likely to start soon and cheap, each in (0, 1]: its price against the
cheapest of its band (1 / price_ratio), zones offered (one zone is a single point of failure), zones recently
unavailable, the spot placement score, and quota headroom (instances at once).

Attempt order: priced before unpriced (a type with no known price on any capacity type comes after every priced
one, smallest first; the band says which may come at all); then the request's GPU model preference, then reserved
capacity before the rest (a reservation with room adds nothing to the bill: the account pays for it either way,
money.reserved_rate), then score; then spread so that consecutive
attempts come from different families where there is a choice (one family's shortage, say every g6, then costs
one attempt, not all of them); `spot-first` tries each type on spot, then on on-demand, before the next type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from functions.shared.domain.capacity.prices import BAND_TOLERANCE, times
from functions.shared.domain.core.vocabulary import CapacityType
from functions.shared.domain.reservations.reservation import room_words

if TYPE_CHECKING:
    from functions.shared.domain.capacity.offers import Candidate
    from functions.shared.domain.requests.job_request import JobRequest

UNPRICED_FACTOR = 0.5  # an offering of unknown price is worth trying, after those whose price is known
FEW_INSTANCES = 2


def rank(request: JobRequest, options: list[Candidate]) -> list[Candidate]:
    """The options within the price band (band.py), scored, explained and in attempt order."""
    for option in options:
        option.score = _score(option)
    ordered, moved = _order(request, options)
    for position, candidate in enumerate(ordered):
        before = ordered[position - 1] if position else None
        candidate.why = _why(request, candidate, before, candidate.instance_type in moved)
    return ordered


def _order(request: JobRequest, options: list[Candidate]) -> tuple[list[Candidate], set[str]]:
    """Attempt order, and the types the spreading moved ahead of better-scored ones of the family before them.
    Reservations go first, in the order selection found them (active first, the soonest to end first), each ahead of
    every other candidate of its GPU model preference or a less preferred one."""
    preference = [m.lower() for m in request.gpu_models or []]

    def model_rank(candidate: Candidate) -> int:
        return preference.index(candidate.gpu_model.lower()) if preference else 0

    def merit(candidate: Candidate) -> tuple[object, ...]:
        if candidate.hourly_usd is None:  # no price to weigh: the smallest instance first
            size = (candidate.gpus, candidate.vcpus, candidate.memory_gib)
            return (model_rank(candidate), *size, -candidate.score, candidate.instance_type)
        return model_rank(candidate), -candidate.score, candidate.hourly_usd, candidate.instance_type

    reserved = [c for c in options if c.reservation is not None]
    options = [c for c in options if c.reservation is None]
    capacity_rank = {c: i for i, c in enumerate((CapacityType.SPOT, CapacityType.ON_DEMAND))}
    priced = sorted((c for c in options if c.hourly_usd is not None), key=merit)
    unpriced = sorted((c for c in options if c.hourly_usd is None), key=merit)
    # One group per type and region: spot-first tries a type on spot, then on on-demand, in one region.
    by_type: dict[tuple[str, str | None], list[Candidate]] = {}
    for candidate in priced + unpriced:
        by_type.setdefault((candidate.instance_type, candidate.region), []).append(candidate)
    groups = [sorted(group, key=lambda c: capacity_rank[c.capacity]) for group in by_type.values()]
    # A type with a price on any capacity type is a priced one (spot-first keeps its unpriced spot offering first).
    # Unpriced types are spread only among those of as many GPUs: no band bounds them, the smallest go first.
    unpriced_groups = [g for g in groups if all(c.hourly_usd is None for c in g)]
    tiers = [[g for g in groups if any(c.hourly_usd is not None for c in g)]] + [
        [g for g in unpriced_groups if g[0].gpus == gpus] for gpus in sorted({g[0].gpus for g in unpriced_groups})
    ]
    ordered: list[Candidate] = []
    moved: set[str] = set()
    for tier in tiers:
        spread, tier_moved = _spread(tier)
        ordered += [candidate for group in spread for candidate in group]
        moved |= tier_moved
    for candidate in sorted(reserved, key=model_rank, reverse=True):
        rank_of = model_rank(candidate)
        after = (i for i, c in enumerate(ordered) if c.reservation is None and model_rank(c) >= rank_of)
        ordered.insert(next(after, len(ordered)), candidate)
    return ordered, moved


def _spread(groups: list[list[Candidate]]) -> tuple[list[list[Candidate]], set[str]]:
    """Best first, but never the same family twice in a row while another family is left."""
    remaining, spread, last, moved = list(groups), [], "", set()
    while remaining:
        pick = next((g for g in remaining if g[0].family != last), remaining[0])
        if pick is not remaining[0]:
            moved.add(pick[0].instance_type)
        remaining.remove(pick)
        spread.append(pick)
        last = pick[0].family
    return spread, moved


def _score(candidate: Candidate) -> float:
    if candidate.reservation is not None:
        price = 1.0  # the account pays for it either way
    else:
        price = UNPRICED_FACTOR if candidate.price_ratio is None else 1 / max(candidate.price_ratio, 1.0)
    factors: list[float] = [price]
    zones = len(candidate.zones)
    factors.append(min(1.0, zones / 2))
    if candidate.unavailable_zones:
        factors.append(zones / (zones + len(candidate.unavailable_zones)))
    if candidate.placement_score is not None:
        factors.append(candidate.placement_score / 10)
    if candidate.quota_instances is not None:
        factors.append(min(1.0, candidate.quota_instances / FEW_INSTANCES))
    score = 1.0
    for factor in factors:
        score *= factor
    return round(score, 4)


def _why(request: JobRequest, candidate: Candidate, before: Candidate | None, moved: bool) -> str:
    """Its price for this job, its availability signals, and why it is where it is, in a few words each."""
    if candidate.reserved is not None:
        rate = "no known rate" if candidate.hourly_usd is None else f"${candidate.hourly_usd:.4g}/h"
        return f"{room_words(candidate.reserved)}; {rate}, paid whether used or not: adds $0/h to the bill"
    if candidate.hourly_usd is None:
        like = f"; as many {candidate.gpu_model} GPUs as {candidate.comparable_to}" if candidate.comparable_to else ""
        allowed = ", allowed by allow_unpriced" if request.allow_unpriced and not like else ""
        price = f"no known price{like}{allowed}: after every priced type"
    else:
        held = f" ({request.gpus} of its {candidate.gpus} GPUs)" if candidate.gpus > request.gpus else ""
        ratio = candidate.price_ratio or 1.0
        versus = "the cheapest" if ratio <= 1 + BAND_TOLERANCE else f"{times(ratio)} the cheapest"
        price = f"${candidate.hourly_usd:.4g}/h for this job{held}, {versus}"
    words = [price]
    zones = len(candidate.zones)
    words.append(f"{zones} zone{'s' if zones > 1 else ''}")
    if candidate.unavailable_zones:
        words.append(f"recently unavailable in {', '.join(candidate.unavailable_zones)}")
    if candidate.placement_score is not None:
        words.append(f"spot placement score {candidate.placement_score}/10")
    if candidate.quota_instances is not None:
        words.append(f"quota {candidate.quota_code} allows {candidate.quota_instances} at once")
    if before is not None and (before.instance_type, before.region) == (candidate.instance_type, candidate.region):
        words.append(f"{candidate.capacity.value} after its {before.capacity.value}")
    elif before is not None and moved:
        words.append(f"another family than the {before.family} before it")
    return "; ".join(words)
