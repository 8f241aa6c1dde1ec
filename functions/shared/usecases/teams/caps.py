"""A job held by its team's GPU cap: AWS Batch holds it RUNNABLE until the team's running jobs free enough of the
team's consumable resource; this says so, with the figures Batch gives (what the team holds, its cap, the team's jobs
waiting before it)."""

from __future__ import annotations

from functions.shared.domain.diagnosis.runnable import Diagnosis
from functions.shared.domain.teams.caps import cap_diagnosis
from functions.shared.ports import Ports


def cap_wait(team: str | None, resource: str | None, gpus: int, batch_job_id: str, ports: Ports) -> Diagnosis | None:
    """TEAM_GPU_CAP when the team's cap is what holds the job (`ports`: its attempt's region), else None."""
    if resource is None or team is None:
        return None
    usage = ports.caps.usage(resource)
    if usage is None:
        return None
    in_use, max_gpus = usage
    if in_use + gpus <= max_gpus:
        return None
    waiting = ports.caps.waiting(resource)
    mine = next((created for job_id, created in waiting if job_id == batch_job_id), None)
    ahead = sum(1 for job_id, created in waiting if job_id != batch_job_id and (mine is None or created < mine))
    return cap_diagnosis(team, gpus, in_use, max_gpus, ahead)
