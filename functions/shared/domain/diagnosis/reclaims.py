"""A spot attempt whose hosts EC2 took back: what the workflow says of it and does about it. Pure."""

from __future__ import annotations

from functions.shared.domain.core.vocabulary import DiagnosisCategory, counted
from functions.shared.domain.diagnosis.runnable import Diagnosis


def reclaim_diagnosis(
    instance_type: str,
    host_terminations: list[str],
    reclaims_before_fallback: int,
    zone: str | None,
    next_type: str | None,
    next_capacity: str | None,
) -> Diagnosis:
    """A spot attempt whose hosts EC2 took back `spot_reclaims_before_fallback` times: spot capacity for the type
    is short where it ran, and another offering cures that (the next candidate, normally on-demand)."""
    reclaims = len(host_terminations)
    where = f" in {zone}" if zone else ""
    then = f"GPU Pilot moves on to {next_type} ({next_capacity})" if next_type else "No candidate is left to move to"
    return Diagnosis(
        category=DiagnosisCategory.INSUFFICIENT_CAPACITY,
        reason=f"EC2 reclaimed the spot {instance_type}{where} {counted(reclaims, 'time')}: "
        f"{host_terminations[-1] if host_terminations else 'Host EC2 terminated.'}",
        evidence={
            "host_terminations": host_terminations,
            "reclaims": reclaims,
            "spot_reclaims_before_fallback": reclaims_before_fallback,
            "instance_type": instance_type,
            "zone": zone,
        },
        recommendation=f"{then}: spot capacity for {instance_type}{where} is being taken back. Raise "
        "spot_reclaims_before_fallback to let Batch retry on spot longer, or ask for on-demand capacity.",
    )
