"""What a diagnosis reads and says: the snapshot of a waiting job's pool, its fleet and the vCPU quota, read from AWS
as plain data, and the diagnosis made of it. Pure."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from functions.shared.domain.capacity.quotas import QuotaState
from functions.shared.domain.core.clock import seconds_between
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.vocabulary import DiagnosisCategory
from functions.shared.domain.fleet.analysis import (
    LAUNCH_GRACE_SECONDS,
    REGISTRATION_GRACE_SECONDS,
    FleetAnalysis,
    analyse_fleet,
)
from functions.shared.domain.fleet.batch import BatchJobState, ComputeEnvironmentState, FleetState


class Diagnosis(DomainModel):
    category: DiagnosisCategory
    reason: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    recommendation: str


class StuckJobSnapshot(DomainModel):
    """What diagnosis looks at, as plain data read from AWS: the job, its pool, the pool's fleet, the quota."""

    job: BatchJobState
    environment: ComputeEnvironmentState
    at: str = Field(description="When the snapshot was read (ISO)")
    fleet: FleetState | None = None
    instance_vcpus: dict[str, int] = Field(default_factory=dict, description="vCPUs of each GPU type")
    quota: QuotaState | None = None
    quota_unavailable: str | None = Field(default=None, description="Why the quota could not be read (call: error)")
    registration_grace_seconds: float = REGISTRATION_GRACE_SECONDS
    launch_grace_seconds: float = LAUNCH_GRACE_SECONDS
    fleet_analysis: FleetAnalysis | None = Field(default=None, description="The fleet, analysed already")
    consoles: dict[str, str] = Field(
        default_factory=dict, description="Console output of instances that never registered or have no GPUs"
    )

    @property
    def runnable_seconds(self) -> float:
        return seconds_between(self.job.created_at, self.at) if self.job.created_at else 0.0

    def analysis(self) -> FleetAnalysis:
        if self.fleet_analysis is not None:
            return self.fleet_analysis
        return analyse_fleet(self.fleet or FleetState(), self.at, self.instance_vcpus, self.registration_grace_seconds)
