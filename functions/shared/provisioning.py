"""Pooled GPU compute environments and job queues: pure specs, and an adapter that creates or reuses them.

Batch allows 50 compute environments and 50 queues per region, so jobs share pools keyed by
(instance type, capacity, arch) instead of getting one each.
"""

from __future__ import annotations

import re
from typing import Any

from botocore.exceptions import ClientError
from pydantic import BaseModel

from functions.shared.config import Settings
from functions.shared.models import Candidate

IMAGE_TYPE = "ECS_AL2023_NVIDIA"
ALLOCATION = {"on-demand": "BEST_FIT_PROGRESSIVE", "spot": "SPOT_PRICE_CAPACITY_OPTIMIZED"}
RESOURCE_TYPE = {"on-demand": "EC2", "spot": "SPOT"}
MAX_READY_CHECKS = 30


class ComputeEnvironmentInvalid(Exception):
    """Batch marked our pooled compute environment INVALID: its statusReason says why."""


class QueueNotReady(Exception):
    """The pool did not become VALID within the bounded number of checks."""


class Pool(BaseModel):
    """Names and shape of one pooled compute environment + job queue."""

    name: str
    instance_types: list[str]
    capacity: str
    arch: str


class QueueStatus(BaseModel):
    job_queue: str
    compute_environment: str
    ready: bool
    checks: int
    status: str
    status_reason: str | None = None


def pool_for(candidate: Candidate, arch: str, prefix: str) -> Pool:
    """The pool a candidate runs in (same candidate, same pool: that is what makes it reusable)."""
    capacity = "od" if candidate.capacity == "on-demand" else "spot"
    type_part = re.sub(r"[^A-Za-z0-9]", "-", candidate.instance_type)
    return Pool(
        name=f"{prefix}-{capacity}-{arch.replace('_', '')}-{type_part}",
        instance_types=[candidate.instance_type],
        capacity=candidate.capacity,
        arch=arch,
    )


def ec2_configuration(pool: Pool, settings: Settings) -> list[dict[str, str]]:
    """The GPU AMI for a pool: Batch's AL2023 NVIDIA image, or the configured Graviton one.

    (Selection leaves out p3/g3, which the AL2023 NVIDIA image does not support.)
    """
    if pool.arch == "arm64":
        return [{"imageType": "ECS_AL2023", "imageIdOverride": settings.arm64_gpu_ami_id}]
    return [{"imageType": IMAGE_TYPE}]


def compute_environment_spec(pool: Pool, settings: Settings) -> dict[str, Any]:
    """`CreateComputeEnvironment` arguments for a GPU pool: managed, scales to zero, NVIDIA AMI."""
    resources: dict[str, Any] = {
        "type": RESOURCE_TYPE[pool.capacity],
        "allocationStrategy": ALLOCATION[pool.capacity],
        "minvCpus": 0,
        "desiredvCpus": 0,
        "maxvCpus": settings.max_vcpus,
        "instanceTypes": pool.instance_types,
        "subnets": settings.subnets,
        "securityGroupIds": settings.security_groups,
        "instanceRole": settings.instance_profile_arn,
        "ec2Configuration": ec2_configuration(pool, settings),
        "tags": {"gpupilot:pool": pool.name},
    }
    if settings.launch_template_name:
        resources["launchTemplate"] = {"launchTemplateName": settings.launch_template_name, "version": "$Latest"}
    spec = {
        "computeEnvironmentName": pool.name,
        "type": "MANAGED",
        "state": "ENABLED",
        "computeResources": resources,
        "tags": {"gpupilot:pool": pool.name, "gpupilot:capacity": pool.capacity},
    }
    if settings.batch_service_role_arn:
        spec["serviceRole"] = settings.batch_service_role_arn
    return spec


def _already_exists(error: ClientError) -> bool:
    return "already exist" in error.response.get("Error", {}).get("Message", "").lower()


class BatchPools:
    """Adapter over AWS Batch for pooled compute environments and queues."""

    def __init__(self, batch: Any, settings: Settings) -> None:
        self._batch = batch
        self._settings = settings

    def ensure(self, pool: Pool, checks: int = 0) -> QueueStatus:
        """Create the pool's CE and queue if missing, reuse them if present; say whether both are VALID."""
        environment = self._ensure_compute_environment(pool)
        if environment.get("status") == "INVALID":
            raise ComputeEnvironmentInvalid(
                f"{pool.name}: {environment.get('statusReason') or 'no statusReason given'}"
            )
        queue = self._ensure_queue(pool, environment["computeEnvironmentArn"])
        ready = environment.get("status") == "VALID" and queue.get("status") == "VALID"
        if not ready and checks + 1 >= MAX_READY_CHECKS:
            raise QueueNotReady(
                f"{pool.name} still {environment.get('status')}/{queue.get('status')} after {checks + 1} checks"
            )
        return QueueStatus(
            job_queue=queue["jobQueueName"],
            compute_environment=pool.name,
            ready=ready,
            checks=checks + 1,
            status=f"{environment.get('status')}/{queue.get('status')}",
            status_reason=environment.get("statusReason") or queue.get("statusReason"),
        )

    def _describe_environment(self, name: str) -> dict[str, Any] | None:
        found = self._batch.describe_compute_environments(computeEnvironments=[name])["computeEnvironments"]
        return found[0] if found else None

    def _ensure_compute_environment(self, pool: Pool) -> dict[str, Any]:
        existing = self._describe_environment(pool.name)
        if existing is not None:
            return existing
        try:
            self._batch.create_compute_environment(**compute_environment_spec(pool, self._settings))
        except ClientError as error:
            # Two workflows raced to create the same pool: the loser reuses the winner's.
            if not _already_exists(error):
                raise
        created = self._describe_environment(pool.name)
        if created is None:
            raise QueueNotReady(f"{pool.name} was created but cannot be described yet")
        return created

    def _ensure_queue(self, pool: Pool, environment_arn: str) -> dict[str, Any]:
        found = self._batch.describe_job_queues(jobQueues=[pool.name])["jobQueues"]
        if found:
            return dict(found[0])
        try:
            self._batch.create_job_queue(
                jobQueueName=pool.name,
                state="ENABLED",
                priority=1,
                computeEnvironmentOrder=[{"order": 1, "computeEnvironment": environment_arn}],
                tags={"gpupilot:pool": pool.name},
            )
        except ClientError as error:
            if not _already_exists(error):
                raise
        return dict(self._batch.describe_job_queues(jobQueues=[pool.name])["jobQueues"][0])
