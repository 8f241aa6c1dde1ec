"""What a pool's fleet says about a waiting job: instances that never registered with ECS, registered
without their GPUs, or whose agent disconnected, and how much of the pool's maxvCpus is taken. Pure."""

from __future__ import annotations

from pydantic import Field

from functions.shared.domain.batch import FleetState
from functions.shared.domain.clock import age_seconds
from functions.shared.domain.model import DomainModel

# Production: a GPU instance boots and its ECS agent registers within minutes; past this it never will.
REGISTRATION_GRACE_SECONDS = 600.0
# Production: Batch launches an instance for a RUNNABLE job within minutes when it can.
LAUNCH_GRACE_SECONDS = 600.0


class InstanceEvidence(DomainModel):
    instance_id: str
    instance_type: str
    age_seconds: int
    container_instance: str | None = None


class FleetAnalysis(DomainModel):
    """The pool's instances, sorted by what is wrong with them."""

    alive: int = 0
    alive_vcpus: int = 0
    usable: int = Field(default=0, description="registered, agent connected, GPUs registered")
    booting: list[InstanceEvidence] = Field(default_factory=list)
    unregistered: list[InstanceEvidence] = Field(default_factory=list)
    gpu_less: list[InstanceEvidence] = Field(default_factory=list)
    disconnected: list[InstanceEvidence] = Field(default_factory=list)

    def evidence(self) -> dict[str, object]:
        """The analysis as diagnosis evidence (ids, types, ages)."""
        found: dict[str, object] = {"instances_alive": self.alive, "instances_usable": self.usable}
        for name in ("unregistered", "gpu_less", "disconnected", "booting"):
            items = getattr(self, name)
            if items:
                found[f"instances_{name}"] = [item.model_dump(exclude_none=True) for item in items]
        return found


def analyse_fleet(
    fleet: FleetState, at: str, instance_vcpus: dict[str, int], grace_seconds: float = REGISTRATION_GRACE_SECONDS
) -> FleetAnalysis:
    """Sort the pool's live instances: usable, booting, never registered, registered without GPUs, disconnected."""
    registered = {c.ec2_instance_id: c for c in fleet.container_instances if c.registered}
    analysis = FleetAnalysis()
    for instance in fleet.instances:
        if not instance.alive:
            continue
        age = round(age_seconds(instance.launched_at, at)) if instance.launched_at else 0
        container = registered.get(instance.instance_id)
        item = InstanceEvidence(
            instance_id=instance.instance_id,
            instance_type=instance.instance_type,
            age_seconds=age,
            container_instance=container.arn if container else None,
        )
        analysis.alive += 1
        analysis.alive_vcpus += instance_vcpus.get(instance.instance_type, 0)
        if container is None:
            (analysis.unregistered if age >= grace_seconds else analysis.booting).append(item)
        elif not container.agent_connected:
            analysis.disconnected.append(item)
        elif container.gpus == 0:
            analysis.gpu_less.append(item)
        else:
            analysis.usable += 1
    return analysis


class QuotaState(DomainModel):
    """An EC2 vCPU quota (Service Quotas) that bounds the pool's instances."""

    code: str
    name: str
    vcpus: float
    used_vcpus: float | None = Field(default=None, description="vCPUs of the account's running instances it counts")

    @property
    def free_vcpus(self) -> float:
        return self.vcpus - (self.used_vcpus or 0)


QUOTA_NAMES = {
    "L-DB2E81BA": "Running On-Demand G and VT instances",
    "L-417A185B": "Running On-Demand P instances",
    "L-3819A6DF": "All G and VT Spot Instance Requests",
    "L-7212CCBC": "All P Spot Instance Requests",
}


def vcpu_quota_code(instance_type: str, spot: bool) -> str:
    """The EC2 Service Quotas code (service `ec2`) that bounds this type's vCPUs."""
    p_family = instance_type.startswith("p")
    if spot:
        return "L-7212CCBC" if p_family else "L-3819A6DF"
    return "L-417A185B" if p_family else "L-DB2E81BA"
