"""Leaving a GPU offering behind: remember it as unavailable so the next selections skip it too."""

from __future__ import annotations

from functions.shared.domain.diagnosis import Diagnosis
from functions.shared.domain.selection import UNAVAILABLE_TTL_SECONDS, Candidate, offering_key
from functions.shared.domain.vocabulary import MetricName
from functions.shared.ports import Ports


def leave_offering(candidate: Candidate, diagnosis: Diagnosis, ports: Ports) -> None:
    """Remember the candidate's offering in each of its zones as unavailable, for the TTL, and count it."""
    for zone in candidate.zones:
        ports.offerings.remember_unavailable(
            offering_key(candidate.capacity, candidate.instance_type, zone),
            diagnosis.category.value,
            UNAVAILABLE_TTL_SECONDS,
        )
    ports.metrics.add(MetricName.FALLBACKS, 1)
