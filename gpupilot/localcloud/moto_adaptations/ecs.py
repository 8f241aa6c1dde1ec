"""ECS, as AWS Batch uses it and as GPU Pilot drains and checks its container instances.

15. Batch's ECS clusters: moto names every compute environment's cluster `OnDemand_Batch_<uuid>`. AWS Batch
   names it after the compute environment, `<name>_Batch_<uuid>` (AWS Batch API Reference,
   DescribeComputeEnvironments example: compute environment P2OnDemand, cluster P2OnDemand_Batch_2c06f29d-...),
   and GPU Pilot's IAM scopes its fleet reads and deregistrations to its compute environments' clusters by that
   name. Here the cluster is named as AWS Batch names it.

18. ECS UpdateContainerInstancesState: moto fails with a server error (HTTP 500) on a cluster that never had a
   container instance, and takes any number of them. AWS takes "A list of up to 10 container instance IDs or full
   ARN entries" and answers an instance it does not know with a `failures` entry, as DescribeContainerInstances
   does (reason MISSING). Here both are answered as AWS answers them.

19. ECS DescribeContainerInstances `include=CONTAINER_INSTANCE_HEALTH`: moto supports only TAGS and never returns
   `healthStatus`. AWS returns it when asked ("If this field is omitted, tags and container instance health status
   aren't included in the response"), and on the EC2 launch type it checks the container runtime ("The Amazon ECS
   container agent detects a change in container runtime health ... Availability: EC2 launch type"). Here it is
   returned when asked: CONTAINER_RUNTIME OK, or IMPAIRED where the simulator says so (`gpupilot_impaired`).

tests/integration/test_moto_adaptations.py holds a test per adaptation that fails if moto changes under it.
"""

from __future__ import annotations

from typing import Any

from gpupilot.localcloud.moto_adaptations.patches import Patches

BATCH_CLUSTER_NAME = "{environment}_Batch_{uuid}"


def name_clusters_as_batch_does(patches: Patches) -> None:
    """15. A new compute environment's ECS cluster is `<compute environment name>_Batch_<uuid>`."""
    import uuid

    from moto.batch.models import BatchBackend

    original = BatchBackend.create_compute_environment

    def create(self: Any, compute_environment_name: str, *args: Any, **kwargs: Any) -> Any:
        environment = original(self, compute_environment_name, *args, **kwargs)
        named = BATCH_CLUSTER_NAME.format(environment=environment.name, uuid=uuid.uuid4())
        if environment.ecs_name and not environment.ecs_name.startswith(f"{environment.name}_Batch_"):
            # Replaced without a trace: AWS never had moto's name (a deleted cluster would stay listed INACTIVE).
            self.ecs_backend.clusters.pop(environment.ecs_name, None)
            environment.set_ecs(self.ecs_backend.create_cluster(named).arn, named)
        return environment

    patches.replace(BatchBackend, "create_compute_environment", create)


MAX_STATE_UPDATES = 10


def container_instance_states(patches: Patches) -> None:
    """18. UpdateContainerInstancesState: 10 instances at most; an unknown one is a `failures` entry, never a 500."""
    from moto.ecs.exceptions import InvalidParameterException
    from moto.ecs.models import EC2ContainerServiceBackend

    original = EC2ContainerServiceBackend.update_container_instances_state

    def update(self: Any, cluster_str: str, ids: list[str], status: str) -> Any:
        if len(ids) > MAX_STATE_UPDATES:
            raise InvalidParameterException(f"containerInstances: {len(ids)} given, {MAX_STATE_UPDATES} at most")
        cluster = self._get_cluster(cluster_str)  # unknown: ClusterNotFoundException
        self.container_instances.setdefault(cluster.name, {})
        return original(self, cluster_str, ids, status)

    patches.replace(EC2ContainerServiceBackend, "update_container_instances_state", update)


def container_instance_health(patches: Patches) -> None:
    """19. DescribeContainerInstances gives `healthStatus` when asked (CONTAINER_INSTANCE_HEALTH), as on EC2."""
    import copy

    from moto.core.responses import ActionResult
    from moto.core.utils import utcnow
    from moto.ecs.responses import EC2ContainerServiceResponse

    def health(instance: Any) -> dict[str, Any]:
        impaired = getattr(instance, "gpupilot_impaired", None)
        check = {"type": "CONTAINER_RUNTIME", "status": "IMPAIRED" if impaired else "OK", "lastUpdated": utcnow()}
        if impaired:
            check["statusReason"] = impaired
        return {"overallStatus": check["status"], "details": [check]}

    original = EC2ContainerServiceResponse.describe_container_instances

    def describe(self: Any) -> Any:
        if "CONTAINER_INSTANCE_HEALTH" not in (self._get_param("include") or []):
            return original(self)
        instances, failures = self.ecs_backend.describe_container_instances(
            self._get_param("cluster", "default"), self._get_param("containerInstances")
        )
        # Copies carry the health: the backend's own objects stay as they are for other callers.
        answered = [copy.copy(instance) for instance in instances]
        for instance in answered:
            instance.health_status = health(instance)
        return ActionResult({"failures": failures, "containerInstances": answered})

    patches.replace(EC2ContainerServiceResponse, "describe_container_instances", describe)
