"""Step 5 of the planning walk (planning.py), the rejections: every offering left out, by the offerings step of each
capacity region or by the price band, in one list, the cheapest fix first (offers.py gives the order of the kinds).
A rejection that does not depend on the region (the request named an unknown type, or a type's shape or the
request's filters rule it out) is said once; the others name their region. Pure."""

from __future__ import annotations

from functions.shared.domain.capacity.offers import FILTER, SHAPE, UNKNOWN, Found, Rejected, Rejection

REGION_INDEPENDENT = frozenset({UNKNOWN, SHAPE, FILTER})


def in_order(found: list[tuple[str | None, Found]], beyond_band: list[Rejection]) -> list[Rejected]:
    """The rejections of each region's offerings (region, what it found), then the band's, the cheapest fix first."""
    rejections: list[Rejection] = []
    said: set[tuple[str, str, str | None]] = set()
    for region, own in found:
        for rejection in own.rejections:
            if rejection.order[0] in REGION_INDEPENDENT:
                words = (rejection.rejected.instance_type, rejection.rejected.reason, rejection.rejected.field)
                if words in said:
                    continue
                said.add(words)
            else:
                rejection.rejected.region = region
            rejections.append(rejection)
    rejections += beyond_band
    return [r.rejected for r in sorted(rejections, key=lambda r: r.order)]
