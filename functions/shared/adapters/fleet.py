"""Amazon EC2 and ECS: a pool's instances (by the pool tag Batch propagates) and its cluster's container
instances. IAM: ec2:DescribeInstances has no resource types; ECS calls are scoped to the cluster and its
container instances, whose names Batch chooses (so any cluster of this account and region)."""

from __future__ import annotations

from typing import Any

from functions.shared.adapters.base import ClientAdapter
from functions.shared.adapters.clients import client
from functions.shared.domain.batch import ContainerInstanceState, Ec2InstanceState, FleetState
from functions.shared.domain.pools import POOL_TAG

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("ec2:DescribeInstances", "ecs:ListContainerInstances", "ecs:DescribeContainerInstances")
DESCRIBE_PAGE = 100  # DescribeContainerInstances takes at most 100


class Ec2EcsFleet(ClientAdapter):
    """Implements ports.Fleet."""

    service = "ec2"

    def __init__(self, ec2: Any | None = None, ecs: Any | None = None) -> None:
        super().__init__(ec2)
        self._ecs_given = ecs

    @property
    def _ecs(self) -> Any:
        return self._ecs_given or client("ecs")

    def instances(self, pools: list[str]) -> dict[str, list[Ec2InstanceState]]:
        """Live instances of each pool, in one paginated DescribeInstances."""
        found: dict[str, list[Ec2InstanceState]] = {pool: [] for pool in pools}
        if not pools:
            return found
        pages = self._aws.get_paginator("describe_instances").paginate(
            Filters=[
                {"Name": f"tag:{POOL_TAG}", "Values": pools},
                {"Name": "instance-state-name", "Values": ["pending", "running"]},
            ]
        )
        for page in pages:
            for reservation in page["Reservations"]:
                for instance in reservation["Instances"]:
                    pool = next((t["Value"] for t in instance.get("Tags", []) if t["Key"] == POOL_TAG), None)
                    if pool in found:
                        found[pool].append(Ec2InstanceState.from_ec2(instance))
        return found

    def container_instances(self, cluster_arn: str) -> list[ContainerInstanceState]:
        arns = [
            arn
            for page in self._ecs.get_paginator("list_container_instances").paginate(cluster=cluster_arn)
            for arn in page["containerInstanceArns"]
        ]
        described: list[ContainerInstanceState] = []
        for start in range(0, len(arns), DESCRIBE_PAGE):
            page = self._ecs.describe_container_instances(
                cluster=cluster_arn, containerInstances=arns[start : start + DESCRIBE_PAGE]
            )
            described.extend(ContainerInstanceState.from_ecs(c) for c in page["containerInstances"])
        return described

    def fleets(self, pools: dict[str, str | None]) -> dict[str, FleetState]:
        """pool -> its fleet, for pools given with their cluster ARN (None: no cluster yet)."""
        instances = self.instances(sorted(pools))
        return {
            pool: FleetState(
                instances=instances.get(pool, []),
                container_instances=self.container_instances(cluster) if cluster else [],
            )
            for pool, cluster in pools.items()
        }
