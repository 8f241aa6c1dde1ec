"""ECS, as AWS Batch uses it.

15. Batch's ECS clusters: moto names every compute environment's cluster `OnDemand_Batch_<uuid>`. AWS Batch
   names it after the compute environment, `<name>_Batch_<uuid>` (AWS Batch API Reference,
   DescribeComputeEnvironments example: compute environment P2OnDemand, cluster P2OnDemand_Batch_2c06f29d-...),
   and GPU Pilot's IAM scopes its fleet reads and deregistrations to its compute environments' clusters by that
   name. Here the cluster is named as AWS Batch names it.

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
