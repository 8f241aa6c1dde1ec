"""Step 1 of the planning walk (planning.py), signals in: what a plan for a request needs read (the types its shape
fits, the capacity types, their vCPU quotas), and which spot types are worth a placement score. The use case reads
them, each once, and hands them to the walk. Pure."""

from __future__ import annotations

from functions.shared.domain.capacity.catalog import GpuType
from functions.shared.domain.capacity.fit import capacities_for, fit_problem
from functions.shared.domain.capacity.market import SignalNeeds, Signals
from functions.shared.domain.capacity.planning import plan
from functions.shared.domain.capacity.quotas import vcpu_quota_code
from functions.shared.domain.core.vocabulary import CapacityType
from functions.shared.domain.requests.job_request import JobRequest

# GetSpotPlacementScores: "If you specify one or two instance types, or specify variations of a single instance
# type [...], the returned placement score will always be low." Fewer types than this are never asked about.
MIN_SCORED_TYPES = 3


def signal_needs(request: JobRequest, catalog: dict[str, GpuType]) -> SignalNeeds:
    """What a plan for `request` needs read: the types its shape fits, the capacity types, their vCPU quotas."""
    fitting = sorted(t for t, gpu in catalog.items() if fit_problem(request, gpu) is None)
    capacities = capacities_for(request)
    codes = {vcpu_quota_code(t, capacity == CapacityType.SPOT) for t in fitting for capacity in capacities}
    return SignalNeeds(fitting=fitting, capacities=capacities, quota_codes=sorted(c for c in codes if c))


def placement_score_types(request: JobRequest, signals: Signals) -> list[str]:
    """The spot types whose placement score to ask for, as one set: those the job would try (a first walk, ranked
    without scores), with the next spot candidates when they are fewer than three (AWS scores one or two types low
    whatever the capacity); none when fewer than three types could be asked about, so that a score AWS always gives
    low never demotes spot."""
    if CapacityType.SPOT not in capacities_for(request):
        return []
    unscored = signals.model_copy(update={"market": signals.market.model_copy(update={"placement_scores": {}})})
    candidates = plan(request, unscored).candidates
    spot_types = list(dict.fromkeys(c.instance_type for c in candidates if c.capacity == CapacityType.SPOT))
    tried = list(
        dict.fromkeys(c.instance_type for c in candidates[: request.max_attempts] if c.capacity == CapacityType.SPOT)
    )
    if not tried:
        return []
    asked = tried + [t for t in spot_types if t not in tried][: max(0, MIN_SCORED_TYPES - len(tried))]
    return asked if len(asked) >= MIN_SCORED_TYPES else []
