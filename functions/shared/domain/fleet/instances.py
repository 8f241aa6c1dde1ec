"""A pool's EC2 instances and its ECS cluster's container instances as plain data, read once at the edge. Pure."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from functions.shared.domain.core.clock import normalize_iso
from functions.shared.domain.core.model import DomainModel


def _iso_time(value: Any) -> str | None:
    """An ISO time from a datetime (boto3 parses EC2 and ECS times) or ISO text."""
    if isinstance(value, datetime):
        return normalize_iso(value.isoformat())
    return normalize_iso(value) if isinstance(value, str) else None


class Ec2InstanceState(DomainModel):
    """One EC2 instance of a pool, as `DescribeInstances` shows it (found by the pool tag Batch propagates)."""

    instance_id: str
    instance_type: str = ""
    state: str = ""
    launched_at: str | None = None
    zone: str = ""
    spot: bool = False

    @classmethod
    def from_ec2(cls, instance: dict[str, Any]) -> Ec2InstanceState:
        launched = instance.get("LaunchTime")
        return cls(
            instance_id=str(instance.get("InstanceId") or ""),
            instance_type=str(instance.get("InstanceType") or ""),
            state=str((instance.get("State") or {}).get("Name") or ""),
            launched_at=_iso_time(launched),
            zone=str((instance.get("Placement") or {}).get("AvailabilityZone") or ""),
            spot=instance.get("InstanceLifecycle") == "spot",
        )

    @classmethod
    def from_container_instance(cls, container: ContainerInstanceState) -> Ec2InstanceState:
        """A registered instance as ECS shows it (its agent runs, so the instance does)."""
        return cls(
            instance_id=container.ec2_instance_id,
            instance_type=container.instance_type,
            state="running",
            launched_at=container.registered_at,
            zone=container.zone,
        )

    @property
    def alive(self) -> bool:
        return self.state in ("pending", "running")


class ContainerInstanceState(DomainModel):
    """One ECS container instance of a pool's cluster, as `DescribeContainerInstances` shows it."""

    arn: str
    ec2_instance_id: str = ""
    status: str = ""
    agent_connected: bool = False
    gpus: int = Field(default=0, description="GPUs registered with ECS (0: registered without GPU resources)")
    registered_at: str | None = None
    instance_type: str = Field(default="", description="ECS's ecs.instance-type attribute")
    zone: str = Field(default="", description="ECS's ecs.availability-zone attribute")
    running_tasks: int = Field(default=0, description="ECS's runningTasksCount")
    health: str | None = Field(default=None, description="ECS's healthStatus.overallStatus, where ECS reports it")
    impaired: list[str] = Field(default_factory=list, description="ECS's health checks that are IMPAIRED, with why")

    @property
    def registered(self) -> bool:
        return self.status in ("ACTIVE", "DRAINING")

    @property
    def draining(self) -> bool:
        """ECS places no new task on it (DRAINING)."""
        return self.status == "DRAINING"

    @classmethod
    def from_ecs(cls, container_instance: dict[str, Any]) -> ContainerInstanceState:
        gpus = next(
            (len(r.get("stringSetValue") or []) for r in container_instance.get("registeredResources") or []
             if r.get("name") == "GPU"),
            0,
        )  # fmt: skip
        registered = container_instance.get("registeredAt")
        attributes = {a.get("name"): a.get("value") for a in container_instance.get("attributes") or []}
        health = container_instance.get("healthStatus") or {}
        impaired = [
            f"{check.get('type')}: {check.get('statusReason') or 'IMPAIRED'}"
            for check in health.get("details") or []
            if check.get("status") == "IMPAIRED"
        ]
        return cls(
            instance_type=str(attributes.get("ecs.instance-type") or ""),
            zone=str(attributes.get("ecs.availability-zone") or ""),
            arn=str(container_instance.get("containerInstanceArn") or ""),
            ec2_instance_id=str(container_instance.get("ec2InstanceId") or ""),
            status=str(container_instance.get("status") or ""),
            agent_connected=bool(container_instance.get("agentConnected")),
            gpus=gpus,
            registered_at=_iso_time(registered),
            running_tasks=int(container_instance.get("runningTasksCount") or 0),
            health=health.get("overallStatus"),
            impaired=impaired,
        )


class FleetState(DomainModel):
    """A pool's instances and its cluster's container instances, read together."""

    instances: list[Ec2InstanceState] = Field(default_factory=list)
    container_instances: list[ContainerInstanceState] = Field(default_factory=list)
