"""Hourly prices: the bundled, dated on-demand snapshot (functions/shared/data/prices_on_demand.json)."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from functions.shared.domain.cost import PriceQuote

SNAPSHOT_FILE = "prices_on_demand.json"


@cache
def _snapshot() -> dict[str, Any]:
    return json.loads(resources.files("functions.shared.data").joinpath(SNAPSHOT_FILE).read_text())


class SnapshotPrices:
    """Implements ports.Prices from the bundled snapshot."""

    def on_demand(self, instance_type: str) -> PriceQuote | None:
        snapshot = _snapshot()
        hourly = snapshot["prices"].get(instance_type)
        if hourly is None:
            return None
        return PriceQuote(
            hourly_usd=float(hourly),
            pricing=f"on-demand {snapshot['region']} price snapshot of {snapshot['as_of']}",
        )
