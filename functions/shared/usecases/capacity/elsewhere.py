"""Capacity regions a request may not use that could serve it: what `POST /plan` warns of and what SelectGpuType
keeps for the job's error, with the regions to allow. Only they ask (each plans those regions: more AWS reads);
`POST /jobs` and a deployment of one region never do."""

from __future__ import annotations

from collections.abc import Callable

from functions.shared.domain.capacity.offers import Plan
from functions.shared.domain.core.errors import RequestRefused
from functions.shared.domain.requests.job_request import JobRequest


def other_regions_words(
    request: JobRequest, allowed: list[str], deployed: list[str], plan: Callable[[JobRequest], Plan]
) -> str | None:
    """Which of the `deployed` capacity regions the request may not use (it may use `allowed`) could serve it now, as
    `plan` plans it there, its first choice there, and how to allow them; None when none could."""
    others = [region for region in deployed if region not in allowed]
    if not others:
        return None
    try:
        found = plan(request.model_copy(update={"regions": others}))
    except RequestRefused:
        return None  # the request does not fit those regions (its zones, its reservation): nothing to offer there
    serving = [region for region in others if any(c.region == region for c in found.candidates)]
    if not serving:
        return None
    first, wanted = found.candidates[0], [*allowed, *serving]
    kind = "capacity regions" if len(serving) > 1 else "a capacity region"
    return (
        f"{', '.join(serving)}, {kind} of this deployment the job may not use, could serve it ({first.instance_type} "
        f"{first.capacity.value} in {first.region} first): allow it with regions {', '.join(wanted)} "
        f"({' '.join(f'--region {region}' for region in wanted)})"
    )
