"""Teams share a pool by their weights, as AWS Batch's fair-share scheduling does it: one scheduling policy per region
whose shareDistribution gives each team (its share identifier) a weightFactor from its weight, every pool's queue
created with it, every job submitted with its team as shareIdentifier; and who Batch starts next. Pure.

A lower weightFactor is a larger share: "jobs that use a share identifier with a weight factor of 0.125 (1/8) get 8
times the compute resources of jobs that use a share identifier with a weight factor of 1", 0.0001 to 999.9999, and a
share identifier the policy does not list weighs 1.0 (AWS Batch API Reference, "ShareAttributes"). So weightFactor is
1 / weight: a team of weight 1 (the default) weighs what an unlisted share does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from functions.shared.domain.teams.config import DEFAULT_TEAM, TeamsConfig

# ShareAttributes.weightFactor's range (AWS Batch API Reference, "ShareAttributes"), to four decimals.
MIN_WEIGHT_FACTOR = 0.0001
MAX_WEIGHT_FACTOR = 999.9999
# The shortest memory of past usage Batch keeps (FairsharePolicy.shareDecaySeconds, AWS Batch API Reference,
# "FairsharePolicy"): what a team ran an hour ago does not hold back its jobs now.
SHARE_DECAY_SECONDS = 0
# No vCPUs held back for teams with no job waiting: a pool's capacity goes to whoever waits.
COMPUTE_RESERVATION = 0


def scheduling_policy_name(prefix: str) -> str:
    """The deployment's scheduling policy in each region (Batch: 1-128 letters, digits, - and _)."""
    return f"{prefix}-fair-share"


def weight_factor(weight: float) -> float:
    """Batch's weightFactor for a team's weight: 1 / weight, in Batch's range."""
    return min(MAX_WEIGHT_FACTOR, max(MIN_WEIGHT_FACTOR, round(1 / weight, 4)))


def share_of(team: str | None) -> str:
    """A job's shareIdentifier: its team (a job with none shares as the default team, which weighs 1)."""
    return team or DEFAULT_TEAM


def fairshare_policy(teams: TeamsConfig) -> dict[str, Any]:
    """CreateSchedulingPolicy's `fairsharePolicy`: each team's share identifier and weightFactor."""
    return {
        "shareDecaySeconds": SHARE_DECAY_SECONDS,
        "computeReservation": COMPUTE_RESERVATION,
        "shareDistribution": [
            {"shareIdentifier": name, "weightFactor": weight_factor(team.weight)}
            for name, team in sorted(teams.teams.items())
        ],
    }


def weights_of(policy: Mapping[str, Any]) -> dict[str, float]:
    """Each listed share's weight from a `fairsharePolicy` (weightFactor's inverse)."""
    return {
        str(s["shareIdentifier"]): 1 / float(s.get("weightFactor", 1.0)) for s in policy.get("shareDistribution", [])
    }


def next_share(waiting: Sequence[str], usage: Mapping[str, float], weights: Mapping[str, float]) -> str | None:
    """The share whose job starts next: of the shares with a job waiting (`waiting`, in the order of their oldest
    waiting job), the one whose running usage divided by its weight is least; a tie goes to the oldest waiting job.
    A share the policy does not list weighs 1."""
    best: str | None = None
    best_load = 0.0
    for share in waiting:
        load = usage.get(share, 0.0) / weights.get(share, 1.0)
        if best is None or load < best_load:
            best, best_load = share, load
    return best
