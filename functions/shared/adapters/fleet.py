"""Amazon EC2 and ECS: a pool's instances (by the pool tag Batch propagates) and its cluster's container
instances, their health where ECS reports it, their console output; draining, deregistering and terminating them.
IAM: ec2:DescribeInstances has no resource types; ECS calls are scoped to the clusters Batch creates for GPU
Pilot's pools and their container instances; console output and termination to instances with the pool tag."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from functions.shared.adapters.base import ClientAdapter
from functions.shared.adapters.clients import client
from functions.shared.domain.capacity.quotas import RunningInstances
from functions.shared.domain.fleet.batch import ContainerInstanceState, Ec2InstanceState, FleetState
from functions.shared.domain.pools.specs import POOL_TAG

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = (
    "ec2:DescribeInstances",
    "ec2:DescribeTags",
    "ecs:ListContainerInstances",
    "ecs:DescribeContainerInstances",
    # The sweep's remediation: instances that never registered, container instances whose agent left.
    "ec2:TerminateInstances",
    "ecs:DeregisterContainerInstance",
    # Quarantining a bad GPU host: drained in ECS, then terminated; its console output is evidence.
    "ecs:UpdateContainerInstancesState",
    "ec2:GetConsoleOutput",
)
# The condition keys that hold these calls to what GPU Pilot needs (the IAM drift check proves each refuses a call
# that presents another value): Batch names the instances it launches, so only the pool tag marks GPU Pilot's.
IAM_CONDITIONS = {
    "ec2:TerminateInstances": (f"ec2:ResourceTag/{POOL_TAG}",),
    "ec2:GetConsoleOutput": (f"ec2:ResourceTag/{POOL_TAG}",),
}
FILTER_VALUES = 200  # values per EC2 filter
TERMINATE_PAGE = 1000  # TerminateInstances takes at most 1000 ids
DESCRIBE_PAGE = 100  # DescribeContainerInstances takes at most 100
DRAIN_PAGE = 10  # UpdateContainerInstancesState takes "up to 10 container instance IDs or full ARN entries"
# ECS reports an instance's health (container runtime, on the EC2 launch type) only when asked: "If this field is
# omitted, tags and container instance health status aren't included in the response" (DescribeContainerInstances).
INCLUDE_HEALTH = ["CONTAINER_INSTANCE_HEALTH"]


class Ec2EcsFleet(ClientAdapter):
    """Implements ports.Fleet."""

    service = "ec2"

    def __init__(self, ec2: Any | None = None, ecs: Any | None = None, region: str | None = None) -> None:
        super().__init__(ec2, region)
        self._ecs_given = ecs

    @property
    def _ecs(self) -> Any:
        return self._ecs_given or client("ecs", self._region)

    def instances(self, pools: list[str], instance_ids: list[str] | None = None) -> dict[str, list[Ec2InstanceState]]:
        """Live instances of each pool (or only those of `instance_ids`), in one paginated DescribeInstances."""
        found: dict[str, list[Ec2InstanceState]] = {pool: [] for pool in pools}
        if not pools or instance_ids == []:
            return found
        filters = [
            {"Name": f"tag:{POOL_TAG}", "Values": pools},
            {"Name": "instance-state-name", "Values": ["pending", "running"]},
        ]
        if instance_ids is not None:
            filters.append({"Name": "instance-id", "Values": instance_ids})
        for page in self._aws.get_paginator("describe_instances").paginate(Filters=filters):
            for reservation in page["Reservations"]:
                for instance in reservation["Instances"]:
                    pool = next((t["Value"] for t in instance.get("Tags", []) if t["Key"] == POOL_TAG), None)
                    if pool in found:
                        found[pool].append(Ec2InstanceState.from_ec2(instance))
        return found

    def tagged_instances(self, pools: list[str]) -> dict[str, str]:
        """instance id -> pool, for every instance carrying a pool's tag (DescribeTags: ids only, cheap)."""
        tagged: dict[str, str] = {}
        for start in range(0, len(pools), FILTER_VALUES):
            pages = self._aws.get_paginator("describe_tags").paginate(
                Filters=[
                    {"Name": "resource-type", "Values": ["instance"]},
                    {"Name": "key", "Values": [POOL_TAG]},
                    {"Name": "value", "Values": pools[start : start + FILTER_VALUES]},
                ]
            )
            tagged |= {tag["ResourceId"]: tag["Value"] for page in pages for tag in page["Tags"]}
        return tagged

    def container_instances(self, cluster_arn: str) -> list[ContainerInstanceState]:
        arns = [
            arn
            for page in self._ecs.get_paginator("list_container_instances").paginate(cluster=cluster_arn)
            for arn in page["containerInstanceArns"]
        ]
        described: list[ContainerInstanceState] = []
        for start in range(0, len(arns), DESCRIBE_PAGE):
            page = self._ecs.describe_container_instances(
                cluster=cluster_arn, containerInstances=arns[start : start + DESCRIBE_PAGE], include=INCLUDE_HEALTH
            )
            described.extend(ContainerInstanceState.from_ecs(c) for c in page["containerInstances"])
        return described

    def zone_of(self, container_instance_arn: str) -> str | None:
        described = self.container_instance(container_instance_arn)
        return (described.zone or None) if described else None

    def container_instance(self, container_instance_arn: str) -> ContainerInstanceState | None:
        # arn:aws:ecs:<region>:<account>:container-instance/<cluster>/<id>: the cluster is in the ARN. ECS still
        # describes a container instance for a while after it was deregistered (INACTIVE), then not at all.
        parts = container_instance_arn.split(":", 5)[-1].split("/")
        if len(parts) != 3:
            return None
        try:
            found = self._ecs.describe_container_instances(
                cluster=parts[1], containerInstances=[container_instance_arn]
            )
        except ClientError:
            return None
        described = [ContainerInstanceState.from_ecs(c) for c in found["containerInstances"]]
        return described[0] if described else None

    def fleets(self, pools: dict[str, str | None]) -> dict[str, FleetState]:
        """pool -> its fleet, for pools given with their cluster ARN (None: no cluster yet).

        ECS describes every registered instance (type, zone, GPUs, agent); EC2 is asked only about the
        tagged instances ECS does not know, which are the ones a diagnosis is about. A healthy fleet of any
        size costs one DescribeTags and two ECS calls per pool.
        """
        containers = {pool: self.container_instances(cluster) if cluster else [] for pool, cluster in pools.items()}
        registered = {c.ec2_instance_id for found in containers.values() for c in found if c.registered}
        tagged = self.tagged_instances(sorted(pools))
        unknown = sorted(instance_id for instance_id in tagged if instance_id not in registered)
        described = self.instances(sorted(pools), unknown)
        return {
            pool: FleetState(
                instances=described.get(pool, [])
                + [Ec2InstanceState.from_container_instance(c) for c in containers[pool] if c.registered],
                container_instances=containers[pool],
            )
            for pool in pools
        }

    def running_instances(self, spot: bool) -> list[RunningInstances]:
        """What a vCPU quota counts: the account's pending and running instances of one capacity type, by type and
        by the GPU Pilot pool tag they carry (none: anyone else's)."""
        filters = [{"Name": "instance-state-name", "Values": ["pending", "running"]}]
        if spot:
            filters.append({"Name": "instance-lifecycle", "Values": ["spot"]})
        counts: dict[tuple[str, str], int] = {}
        for page in self._aws.get_paginator("describe_instances").paginate(Filters=filters):
            for reservation in page["Reservations"]:
                for instance in reservation["Instances"]:
                    if spot or instance.get("InstanceLifecycle") != "spot":
                        tags = {t.get("Key"): t.get("Value") for t in instance.get("Tags") or []}
                        key = (instance["InstanceType"], str(tags.get(POOL_TAG) or ""))
                        counts[key] = counts.get(key, 0) + 1
        return [RunningInstances(instance_type=t, pool=pool, count=n) for (t, pool), n in sorted(counts.items())]

    def terminate_instances(self, instance_ids: list[str]) -> None:
        for start in range(0, len(instance_ids), TERMINATE_PAGE):
            self._aws.terminate_instances(InstanceIds=instance_ids[start : start + TERMINATE_PAGE])

    def deregister_container_instance(self, cluster_arn: str, container_instance_arn: str) -> None:
        # force: Batch's tasks on it (if any) are orphaned rather than keeping a dead instance registered.
        self._ecs.deregister_container_instance(
            cluster=cluster_arn, containerInstance=container_instance_arn, force=True
        )

    def drain(self, cluster_arn: str, container_instance_arns: list[str]) -> list[str]:
        # "When you set a container instance to DRAINING, Amazon ECS prevents new tasks from being scheduled for
        # placement on the container instance" (UpdateContainerInstancesState); tasks already there are unaffected.
        failed: list[str] = []
        for start in range(0, len(container_instance_arns), DRAIN_PAGE):
            answer = self._ecs.update_container_instances_state(
                cluster=cluster_arn, containerInstances=container_instance_arns[start : start + DRAIN_PAGE],
                status="DRAINING",
            )  # fmt: skip
            failed += [str(failure.get("arn") or "") for failure in answer.get("failures") or []]
        return failed

    def console_output(self, instance_id: str) -> str | None:
        # Latest: "the latest serial console output" (Nitro types, every current GPU type), not only the buffer
        # posted at the last state transition; "Only the most recent 64 KB of console output is available". botocore
        # decodes the base64 Output itself (its GetConsoleOutput handler).
        try:
            answer = self._aws.get_console_output(InstanceId=instance_id, Latest=True)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in ("InvalidInstanceID.NotFound", "UnsupportedOperation"):
                return None
            raise
        output = answer.get("Output")
        return output if isinstance(output, str) and output else None
