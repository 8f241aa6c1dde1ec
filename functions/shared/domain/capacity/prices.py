"""How offerings' prices are compared: which prices an offering's is held against, a ratio in a few characters, and
the price_band a ratio needs. Pure rules of the planning walk (planning.py), shared by the price band, the ranking
and the plan.

An on-demand offering is held against the cheapest on-demand one (so a `spot-first` job keeps its on-demand
fallbacks, though spot is cheaper), a spot one against the cheapest of either (a spot price above the band of what
on-demand costs saves nothing); with `gpu_models`, within its GPU model only (each model is a preference of its own).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from functions.shared.domain.core.vocabulary import CapacityType

if TYPE_CHECKING:
    from functions.shared.domain.requests.job_request import JobRequest

# Prices are compared as floats: a ratio this close to the band is within it.
BAND_TOLERANCE = 1e-9


def held_against(
    request: JobRequest, capacity: CapacityType, model: str, other: CapacityType, other_model: str
) -> bool:
    """Whether an offering (capacity, model) is held against another's price (see the module's docstring)."""
    same_model = not request.gpu_models or model.lower() == other_model.lower()
    return same_model and (capacity == CapacityType.SPOT or other == capacity)


def needed_band(ratio: float) -> float:
    """The smallest price_band (one decimal, rounded up) that allows an offering `ratio` times the cheapest."""
    return max(1.0, math.ceil(ratio * 10 - 1e-6) / 10)


def times(ratio: float) -> str:
    """A ratio in a few characters: 3.7x, 42x."""
    return f"{ratio:.1f}x" if ratio < 10 else f"{ratio:.0f}x"
