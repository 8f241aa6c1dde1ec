"""The unavailable-offerings memory, as plain data: what was remembered of an offering, why (its category and a
one-line cause with counts and time), and until when; and how a plan says so. Pure."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import Field

from functions.shared.domain.core.clock import iso, parse_iso
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.vocabulary import CapacityType, DiagnosisCategory, counted

# How long an offering that failed (no capacity, a broken pool) is left out of selection, across executions.
UNAVAILABLE_TTL_SECONDS = 1800


def offering_key(capacity: CapacityType, instance_type: str, zone: str, region: str | None = None) -> str:
    """Key of an offering in the unavailable-offerings memory: `capacity:region:type:zone` (`capacity:type:zone`
    without a region: the form before regions, which selection no longer asks for, so such memories expire)."""
    return f"{capacity}:{region}:{instance_type}:{zone}" if region else f"{capacity}:{instance_type}:{zone}"


class UnavailableOffering(DomainModel):
    """One offering (`capacity:type:zone`) left out of selection for a while, and why."""

    category: DiagnosisCategory
    cause: str = Field(
        description="One line with counts and time: 'ECS agent did not register on 2 instances at 12:03'"
    )
    at: str = Field(description="When it was remembered (ISO)")
    expires_at: str = Field(description="When selection may try it again (ISO)")


def remembered(category: DiagnosisCategory, cause: str, at: str, ttl_seconds: float) -> UnavailableOffering:
    """A memory of an offering made at `at`, for `ttl_seconds`."""
    return UnavailableOffering(
        category=category, cause=cause, at=at, expires_at=iso(parse_iso(at) + timedelta(seconds=ttl_seconds))
    )


def clock_minute(at: str) -> str:
    """`12:03 UTC`: a time as a plan or a status line says it (the API's data keeps the ISO time)."""
    return f"{parse_iso(at):%H:%M} UTC"


def _instances(count: int) -> str:
    return f"{count} instance{'s' if count != 1 else ''}"


def fleet_cause(category: DiagnosisCategory, instances: int, at: str) -> str | None:
    """The cause line of a fleet that cannot run jobs (ECS registration, GPUs, agents); None for other categories."""
    what = {
        DiagnosisCategory.ECS_AGENT_NOT_REGISTERED: f"ECS agent did not register on {_instances(instances)}",
        DiagnosisCategory.GPU_NOT_REGISTERED: f"{_instances(instances)} registered with ECS without their GPUs",
        DiagnosisCategory.AGENT_DISCONNECTED: f"ECS agent disconnected on {_instances(instances)}",
    }.get(category)
    return f"{what} at {clock_minute(at)}" if what else None


def diagnosis_cause(category: DiagnosisCategory, reason: str, evidence: dict[str, Any], at: str) -> str:
    """The one-line cause a diagnosis leaves in the memory: Batch's verdict, the fleet's counts, or its reason."""
    fleet = {
        DiagnosisCategory.ECS_AGENT_NOT_REGISTERED: "instances_unregistered",
        DiagnosisCategory.GPU_NOT_REGISTERED: "instances_gpu_less",
        DiagnosisCategory.AGENT_DISCONNECTED: "instances_disconnected",
    }.get(category)
    if fleet is not None:
        line = fleet_cause(category, len(evidence.get(fleet) or []), at)
        assert line is not None
        return line
    reclaims = evidence.get("host_terminations")
    if isinstance(reclaims, list) and reclaims:
        return f"EC2 reclaimed spot instances {counted(len(reclaims), 'time')}, the last at {clock_minute(at)}"
    said = evidence.get("status_reason")
    if isinstance(said, str) and said and reason.startswith("AWS Batch says"):
        # Batch's verdict in its own words, without the instance type list it repeats.
        return f"AWS Batch said {said.split(' - ', 1)[0]} at {clock_minute(at)}"
    short = reason if len(reason) <= 120 else reason[:117] + "..."
    return f"{category.value}: {short} at {clock_minute(at)}"


def rejection_reason(capacity: str, by_zone: dict[str, UnavailableOffering | None]) -> str:
    """Why a remembered offering is left out of a plan, each cause with its zones and expiry: `on-demand: ECS agent
    did not register on 2 instances at 12:03 UTC in us-east-1a (remembered until 12:33 UTC)`. `by_zone` maps each
    zone to its memory (None: remembered without a cause, as memories written before causes were kept)."""
    by_cause: dict[tuple[str, str], list[str]] = {}
    for zone, memory in by_zone.items():
        if memory is not None:
            by_cause.setdefault((memory.cause, memory.expires_at), []).append(zone)
    if len(by_cause) == 0:
        return f"{capacity} capacity recently unavailable in {', '.join(by_zone)}"
    said = [
        f"{cause} in {', '.join(zones)} (remembered until {clock_minute(expires)})"
        for (cause, expires), zones in sorted(by_cause.items(), key=lambda item: item[0][1])
    ]
    return f"{capacity}: " + "; ".join(said)
