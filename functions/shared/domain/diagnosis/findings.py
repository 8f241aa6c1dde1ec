"""What the health sweep reports: a finding (its kind, severity, resource, evidence, recommendation and what GPU
Pilot did), and a sweep's report (`GET /health`, `POST /sweep`)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.vocabulary import (
    FindingKind,
    Severity,
    SweepStatus,
)

MAX_LISTED = 50  # jobs or instances named in one finding (the count is always whole)


class Finding(DomainModel):
    kind: FindingKind
    severity: Severity
    resource: str
    jobs: list[str] = Field(default_factory=list)
    instances: list[str] = Field(default_factory=list)
    evidence: dict[str, Any] = Field(default_factory=dict)
    recommendation: str
    action: str | None = Field(default=None, description="What GPU Pilot did about it, if anything")
    region: str | None = Field(default=None, description="The capacity region of its resource")


class HealthReport(DomainModel):
    """Body of `GET /health`: one sweep's findings."""

    sweep_id: str | None = None
    status: SweepStatus | None = Field(default=SweepStatus.COMPLETE, description="null: no sweep has completed yet")
    swept_at: str | None = None
    findings: list[Finding]
    summary: dict[str, int]
    error: str | None = Field(default=None, description="Why a FAILED sweep failed")


class SweepStarted(DomainModel):
    """Body of `POST /sweep`: the sweep runs in the health_sweep function; read it with GET /health?sweep_id=."""

    sweep_id: str
    status: SweepStatus = SweepStatus.RUNNING
