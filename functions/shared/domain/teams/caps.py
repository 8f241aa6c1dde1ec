"""A team's GPU cap, as AWS Batch holds it: a consumable resource per team, of max_gpus units, that each of its jobs
draws as many of as it has GPUs (its job definition says so), and the diagnosis of a job waiting for it. Pure.

Batch counts a job's units from STARTING until it ends ("Resources are locked once the job moves to STARTING and are
then unlocked when the job moves to SUCCEEDED or FAILED", AWS Batch User Guide, "Specify the resources needed to run a
job"), across every job queue of the region, so the cap spans every pool; a job waiting for its units stays RUNNABLE.
"""

from __future__ import annotations

from typing import Any

from functions.shared.domain.core.vocabulary import DiagnosisCategory, counted
from functions.shared.domain.diagnosis.runnable import Diagnosis


def gpu_resource_name(prefix: str, team: str) -> str:
    """The team's consumable resource (Batch: unique in the account and region, 1-255 of letters, digits, - and _)."""
    return f"{prefix}-team-{team}-gpus"


def team_of(resource: str, prefix: str) -> str:
    """The team whose consumable resource `resource` is (gpu_resource_name's inverse)."""
    return resource.removeprefix(f"{prefix}-team-").removesuffix("-gpus")


def consumable_resources(resource: str | None, gpus: int) -> dict[str, Any]:
    """RegisterJobDefinition's `consumableResourceProperties` for a job of `gpus` GPUs of a capped team (none: {})."""
    if resource is None:
        return {}
    return {"consumableResourceProperties": {"consumableResourceList": [{"consumableResource": resource,
                                                                         "quantity": gpus}]}}  # fmt: skip


def cap_diagnosis(team: str, gpus: int, in_use: int, max_gpus: int, jobs_ahead: int) -> Diagnosis | None:
    """TEAM_GPU_CAP when the team's GPUs in use leave fewer than the job's `gpus` free (None: its cap is not what
    holds it)."""
    if in_use + gpus <= max_gpus:
        return None
    ahead = f", behind {counted(jobs_ahead, 'job')} of the team waiting before it" if jobs_ahead else ""
    return Diagnosis(
        category=DiagnosisCategory.TEAM_GPU_CAP,
        reason=f"team {team} holds {in_use} of its {counted(max_gpus, 'GPU')} (max_gpus): this job's "
        f"{counted(gpus, 'GPU')} start when the team's jobs free them{ahead}",
        evidence={"team": team, "gpus_in_use": in_use, "max_gpus": max_gpus, "jobs_ahead": jobs_ahead, "gpus": gpus},
        recommendation="None: AWS Batch starts it when the team's running jobs end (another GPU type meets the same "
        "cap). To run more at once, an admin raises the team's max_gpus (context teams) or cancels one of its jobs.",
    )
