"""Pools: a pooled GPU compute environment and its job queue, as specs over plain data. Pure.

Batch allows 50 compute environments and 50 queues per region, so jobs share pools keyed by
(instance type, capacity type, arch, zones) instead of getting one each. A pool's name ends with the version
of its spec (a hash of everything Batch would build it from: types, capacity, AMI, launch template version,
subnets, ...): a changed spec is a new pool, new jobs go there, and the sweep drains and deletes the old one.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from pydantic import Field

from functions.shared.domain.diagnosis import Diagnosis
from functions.shared.domain.model import DomainModel
from functions.shared.domain.selection import Candidate
from functions.shared.domain.settings import Settings
from functions.shared.domain.vocabulary import Arch, CapacityType, Remedy

IMAGE_TYPE = "ECS_AL2023_NVIDIA"
ALLOCATION = {CapacityType.ON_DEMAND: "BEST_FIT_PROGRESSIVE", CapacityType.SPOT: "SPOT_PRICE_CAPACITY_OPTIMIZED"}
RESOURCE_TYPE = {CapacityType.ON_DEMAND: "EC2", CapacityType.SPOT: "SPOT"}
MAX_READY_CHECKS = 30
POOL_TAG = "gpupilot:pool"
CAPACITY_TAG = "gpupilot:capacity"
KEY_TAG = "gpupilot:pool-key"
SPEC_TAG = "gpupilot:spec"
# Batch's limits per region, which cannot be raised (AWS Batch User Guide, "AWS Batch service quotas").
MAX_COMPUTE_ENVIRONMENTS = 50
MAX_JOB_QUEUES = 50


class ComputeEnvironmentStatus:
    """Batch's compute environment statuses that matter here."""

    CREATING = "CREATING"
    UPDATING = "UPDATING"
    VALID = "VALID"
    INVALID = "INVALID"


class Pool(DomainModel):
    """Names and shape of one pooled compute environment + job queue."""

    name: str
    instance_types: list[str]
    capacity: CapacityType
    arch: Arch
    zones: list[str] | None = Field(default=None, description="Zones its subnets are limited to (the request's)")
    key: str = Field(default="", description="The pool without its spec version: what versions of it share")
    version: str = Field(default="", description="Hash of its compute environment's spec")


class QueueStatus(DomainModel):
    """EnsureJobQueue's answer: is the pool ready to take the job, and if it never will, what then."""

    job_queue: str
    compute_environment: str
    ready: bool
    checks: int
    status: str
    status_reason: str | None = None
    remedy: Remedy | None = None
    next_index: int | None = None
    diagnosis: Diagnosis | None = None


class QueueNotReady(Exception):
    """The pool did not become VALID within the bounded number of checks."""


def pool_for(candidate: Candidate, arch: Arch, prefix: str, zones: list[str] | None = None) -> Pool:
    """The pool a candidate runs in (same candidate, same zones, same pool: that is what makes it reusable).
    A request limited to zones gets a pool whose subnets are those zones' only, named after them."""
    capacity = "od" if candidate.capacity == CapacityType.ON_DEMAND else "spot"
    type_part = re.sub(r"[^A-Za-z0-9]", "-", candidate.instance_type)
    zone_part = "".join(f"-{zone.rsplit('-', 1)[-1]}" for zone in sorted(zones or []))
    return Pool(
        name=f"{prefix}-{capacity}-{Arch(arch).value.replace('_', '')}-{type_part}{zone_part}",
        instance_types=[candidate.instance_type],
        capacity=candidate.capacity,
        arch=arch,
        zones=sorted(zones) if zones else None,
    )


def ec2_configuration(pool: Pool, settings: Settings) -> list[dict[str, str]]:
    """The GPU AMI for a pool: Batch's AL2023 NVIDIA image, or the configured Graviton one.

    (Selection leaves out p3/g3, which the AL2023 NVIDIA image does not support.)
    """
    if pool.arch == Arch.ARM64:
        return [{"imageType": "ECS_AL2023", "imageIdOverride": settings.arm64_gpu_ami_id}]
    return [{"imageType": IMAGE_TYPE}]


def compute_environment_spec(
    pool: Pool, settings: Settings, subnets: list[str] | None = None, launch_template_version: int | None = None
) -> dict[str, Any]:
    """`CreateComputeEnvironment` arguments for a GPU pool: managed, scales to zero, NVIDIA AMI.

    The pool tag in `computeResources.tags` is propagated by Batch to every instance it launches, which is
    how the sweep and the diagnosis find a pool's instances.
    """
    resources: dict[str, Any] = {
        "type": RESOURCE_TYPE[pool.capacity],
        "allocationStrategy": ALLOCATION[pool.capacity],
        "minvCpus": 0,
        "desiredvCpus": 0,
        "maxvCpus": settings.max_vcpus,
        "instanceTypes": pool.instance_types,
        "subnets": subnets or settings.subnets,
        "securityGroupIds": settings.security_groups,
        "instanceRole": settings.instance_profile_arn,
        "ec2Configuration": ec2_configuration(pool, settings),
        "tags": {POOL_TAG: pool.name},
    }
    if settings.launch_template_name:
        # A version number, not $Latest: Batch resolves $Latest once, at creation, and never again, so a new
        # launch template version would otherwise never reach a pool. A new version is a new pool version.
        version = str(launch_template_version) if launch_template_version else "$Latest"
        resources["launchTemplate"] = {"launchTemplateName": settings.launch_template_name, "version": version}
    tags = {POOL_TAG: pool.name, CAPACITY_TAG: pool.capacity.value}
    if pool.version:
        tags |= {KEY_TAG: pool.key, SPEC_TAG: pool.version}
    spec = {
        "computeEnvironmentName": pool.name,
        "type": "MANAGED",
        "state": "ENABLED",
        "computeResources": resources,
        "tags": tags,
    }
    if settings.batch_service_role_arn:
        spec["serviceRole"] = settings.batch_service_role_arn
    return spec


def spec_version(spec: dict[str, Any]) -> str:
    """The version of a compute environment spec: a hash of what Batch builds it from (not its name or tags),
    the same whatever the order of its subnets and security groups."""
    resources = {k: v for k, v in spec["computeResources"].items() if k != "tags"}
    for listed in ("subnets", "securityGroupIds", "instanceTypes"):
        resources[listed] = sorted(resources.get(listed) or [])
    shape = {k: v for k, v in spec.items() if k not in ("computeEnvironmentName", "tags")} | {
        "computeResources": resources
    }
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:8]


def versioned_pool(
    pool: Pool, settings: Settings, subnets: list[str] | None = None, launch_template_version: int | None = None
) -> tuple[Pool, dict[str, Any]]:
    """The pool named after its spec's version, and its `CreateComputeEnvironment` arguments."""
    version = spec_version(compute_environment_spec(pool, settings, subnets, launch_template_version))
    named = pool.model_copy(update={"name": f"{pool.name}-{version}", "key": pool.name, "version": version})
    return named, compute_environment_spec(named, settings, subnets, launch_template_version)


# jobStateTimeLimitActions: the reasons Batch supports, and its longest limit (600 to 86400 s): a day.
RUNNABLE_LIMIT_REASONS = (
    "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
    "MISCONFIGURATION:COMPUTE_ENVIRONMENT_MAX_RESOURCE",
    "MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT",
)
RUNNABLE_LIMIT_SECONDS = 86400


def job_queue_spec(pool: Pool, compute_environment_arn: str) -> dict[str, Any]:
    """`CreateJobQueue` arguments: one queue per pool, ordering only the pool's compute environment."""
    return {
        "jobQueueName": pool.name,
        "state": "ENABLED",
        "priority": 1,
        "computeEnvironmentOrder": [{"order": 1, "computeEnvironment": compute_environment_arn}],
        # Batch's own backstop for the causes it names, should the workflow and the sweep both be gone.
        "jobStateTimeLimitActions": [
            {"reason": reason, "state": "RUNNABLE", "maxTimeSeconds": RUNNABLE_LIMIT_SECONDS, "action": "CANCEL"}
            for reason in RUNNABLE_LIMIT_REASONS
        ],
        "tags": {POOL_TAG: pool.name},
    }
