"""Leaving a GPU offering behind: remember it as unavailable, with its cause, so the next selections skip it too."""

from __future__ import annotations

from functions.shared.domain.capacity.offers import Candidate
from functions.shared.domain.capacity.unavailable import (
    UNAVAILABLE_TTL_SECONDS,
    diagnosis_cause,
    offering_key,
    remembered,
)
from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.core.vocabulary import MetricName
from functions.shared.domain.diagnosis.runnable import Diagnosis
from functions.shared.ports import Ports


def leave_offering(candidate: Candidate, diagnosis: Diagnosis, ports: Ports, zones: list[str] | None = None) -> None:
    """Remember the candidate's offering in each of its zones (or only `zones`, where the cause was seen) as
    unavailable for the TTL, with the diagnosis's cause, and count the fallback. A reservation is not remembered:
    EC2 says what room it has whenever a plan asks (and its type's on-demand offering is another matter)."""
    ports.metrics.add(MetricName.FALLBACKS, 1)
    if candidate.reservation is not None:
        return
    at = now_iso()
    cause = diagnosis_cause(diagnosis.category, diagnosis.reason, diagnosis.evidence, at)
    memory = remembered(diagnosis.category, cause, at, UNAVAILABLE_TTL_SECONDS)
    for zone in zones or candidate.zones:
        key = offering_key(candidate.capacity, candidate.instance_type, zone, candidate.region)
        ports.offerings.remember_unavailable(key, memory)
