"""What the job's timeline says while EnsureJobQueue provisions its pool: its first choice, or the fallback from
the attempt that gave up."""

from __future__ import annotations

from functions.shared.domain.capacity.offers import Candidate
from functions.shared.domain.jobs.steps import EnsureQueueInput
from functions.shared.ports import Ports


def provisioning_reason(payload: EnsureQueueInput, candidate: Candidate, pool: str, ports: Ports) -> str:
    """Why the job is provisioning this pool: its first choice, or a fallback from the attempt that gave up (and,
    in a deployment of several regions, where each is)."""
    regional = ports.settings.several_regions
    where = f" ({candidate.region})" if candidate.region and regional else ""
    target = f"{candidate.instance_type} {candidate.capacity.value} in pool {pool}{where}"
    if candidate.reserved is not None:
        target = f"{candidate.instance_type} in {candidate.reserved.kind} {candidate.reservation} (pool {pool}){where}"
    number = payload.selection.attempt
    if number == 1:
        return f"first choice: {target}"
    previous = ports.jobs.get_job(payload.job_id).attempts.get(number - 1)
    if previous is None:
        return f"attempt {number}: {target}"
    why = previous.diagnosis.category.value if previous.diagnosis else previous.status_reason or previous.status.value
    tried = f"{previous.instance_type} {previous.capacity.value}{_in(previous.region if regional else None)}"
    return f"falling back from {tried} ({why}) to {target}"


def _in(region: str | None) -> str:
    return f" in {region}" if region else ""
