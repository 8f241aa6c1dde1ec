"""EC2 vCPU quotas (Service Quotas) that bound GPU instances: which quota counts a type, what holds it, and what
it says of a pool that launched nothing. Pure."""

from __future__ import annotations

import re

from pydantic import Field

from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.vocabulary import CapacityType


class RunningInstances(DomainModel):
    """Instances of one type running (or pending) in the account, and whose they are."""

    instance_type: str
    pool: str = Field(default="", description="The GPU Pilot pool they belong to (its tag); empty: anyone else's")
    count: int


class QuotaHolder(DomainModel):
    """What holds part of a vCPU quota: instances of one type, of one pool or of anyone else."""

    instance_type: str
    pool: str = ""
    instances: int
    vcpus: int

    def words(self) -> str:
        whose = f"in pool {self.pool}" if self.pool else "not GPU Pilot's"
        return f"{self.instances} {self.instance_type} {whose} ({self.vcpus} vCPUs)"


class QuotaState(DomainModel):
    """An EC2 vCPU quota (Service Quotas) that bounds the pool's instances."""

    code: str
    name: str
    vcpus: float
    used_vcpus: float | None = Field(default=None, description="vCPUs of the account's running instances it counts")
    holders: list[QuotaHolder] = Field(default_factory=list, description="What those vCPUs are, largest first")

    @property
    def free_vcpus(self) -> float:
        return self.vcpus - (self.used_vcpus or 0)


# The EC2 vCPU quotas (Service Quotas, service `ec2`) that bound GPU instances, by code, with the names AWS
# gives them ("Amazon EC2 instance type quotas"): each name says which instance families it counts.
ON_DEMAND_G_VT = "L-DB2E81BA"


ON_DEMAND_P = "L-417A185B"


SPOT_G_VT = "L-3819A6DF"


SPOT_P2_TO_P4 = "L-7212CCBC"


SPOT_P5 = "L-C4BD4855"


QUOTA_NAMES = {
    ON_DEMAND_G_VT: "Running On-Demand G and VT instances",
    ON_DEMAND_P: "Running On-Demand P instances",
    SPOT_G_VT: "All G and VT Spot Instance Requests",
    SPOT_P2_TO_P4: "All P4, P3 and P2 Spot Instance Requests",
    SPOT_P5: "All P5 Spot Instance Requests",
}


# The instance types each quota bounds, in a few words (a plan says which cheap types a quota keeps from starting).
QUOTA_COVERS = {
    ON_DEMAND_G_VT: "G and VT types",
    ON_DEMAND_P: "P types",
    SPOT_G_VT: "spot G and VT types",
    SPOT_P2_TO_P4: "spot P4, P3 and P2 types",
    SPOT_P5: "spot P5 types",
}


# A type's series and generation: p5en.48xlarge is series p, generation 5 (EC2's instance type names).
P_GENERATION = re.compile(r"^p(\d+)")


def vcpu_quota_code(instance_type: str, spot: bool) -> str | None:
    """The EC2 Service Quotas code (service `ec2`) that bounds this type's vCPUs; None when no published quota
    names its family (spot P6: neither "All P4, P3 and P2" nor "All P5 Spot Instance Requests" does)."""
    generation = P_GENERATION.match(instance_type)
    if generation is None:
        return SPOT_G_VT if spot else ON_DEMAND_G_VT
    if not spot:
        return ON_DEMAND_P  # every P generation, p2 to p6
    number = int(generation.group(1))
    if number <= 4:
        return SPOT_P2_TO_P4
    return SPOT_P5 if number == 5 else None


def quota_holders(
    running: list[RunningInstances], code: str, spot: bool, instance_vcpus: dict[str, int]
) -> list[QuotaHolder]:
    """The running instances quota `code` counts, by type and pool, largest share first."""
    holders = [
        QuotaHolder(
            instance_type=r.instance_type,
            pool=r.pool,
            instances=r.count,
            vcpus=r.count * instance_vcpus.get(r.instance_type, 0),
        )
        for r in running
        if vcpu_quota_code(r.instance_type, spot) == code
    ]
    return sorted(holders, key=lambda h: (-h.vcpus, h.pool, h.instance_type))


def quota_advice(
    code: str | None, quota: QuotaState | None, smallest_vcpus: int, unavailable: str | None = None
) -> tuple[str, str, dict[str, object]]:
    """What the vCPU quota `code` says of a pool that launched no instance: (what it adds to the cause, the
    recommendation, the evidence). `unavailable` is why the quota could not be read, if it could not."""
    which = f"quota {code}, {QUOTA_NAMES[code]}" if code else "the vCPU quota of its instance family"
    recommendation = (
        "Check the compute environment's Auto Scaling activity for the launch error; a vCPU quota of 0 is the "
        f"most common cause in a new account (Service Quotas, service ec2, {which})."
    )
    if quota is None:
        return "", recommendation, {"quota_code": code, "quota_unavailable": unavailable} if unavailable else {}
    evidence: dict[str, object] = {"quota_code": quota.code, "quota_name": quota.name, "quota_vcpus": quota.vcpus}
    if quota.used_vcpus is not None:
        evidence["quota_used_vcpus"] = quota.used_vcpus
    if quota.free_vcpus >= smallest_vcpus:
        return "", recommendation, evidence
    used = f", {quota.used_vcpus:g} of them in use" if quota.used_vcpus else ""
    return (
        f": the account's vCPU quota {quota.code} ({quota.name}) is {quota.vcpus:g}{used}",
        f"Ask for more: `aws service-quotas request-service-quota-increase --service-code ec2 "
        f"--quota-code {quota.code} --desired-value {smallest_vcpus * 4}`. GPU Pilot falls back meanwhile.",
        evidence,
    )


def quota_reason(quota: QuotaState, vcpus: int, capacity: CapacityType) -> str:
    """Why a quota rules a type out, and how to ask for more."""
    return (
        f"needs {vcpus} vCPUs of {capacity.value} quota {quota.code} ({quota.name}), which is {quota.vcpus:g}: "
        f"aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {quota.code} "
        f"--desired-value {max(vcpus, 2 * vcpus)}"
    )
