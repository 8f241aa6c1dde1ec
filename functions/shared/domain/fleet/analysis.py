"""What a pool's fleet says about a waiting job: instances that never registered with ECS, registered
without their GPUs, or whose agent disconnected, and how much of the pool's maxvCpus is taken. Pure."""

from __future__ import annotations

from pydantic import Field

from functions.shared.domain.core.clock import age_seconds
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.fleet.batch import FleetState

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
    draining: list[InstanceEvidence] = Field(
        default_factory=list, description="DRAINING in ECS (quarantined): no new job is placed on them"
    )

    def evidence(self) -> dict[str, object]:
        """The analysis as diagnosis evidence (ids, types, ages)."""
        found: dict[str, object] = {"instances_alive": self.alive, "instances_usable": self.usable}
        for name in ("unregistered", "gpu_less", "disconnected", "booting", "draining"):
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
        elif container.draining:
            analysis.draining.append(item)
        elif container.gpus == 0:
            analysis.gpu_less.append(item)
        else:
            analysis.usable += 1
    return analysis
