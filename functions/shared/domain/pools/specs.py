"""Pools: a pooled GPU compute environment and its job queue, as specs over plain data. Pure.

Batch allows 50 compute environments and 50 queues per region, so jobs share pools keyed by
(instance type, capacity type, arch, zones) instead of getting one each. A pool's name ends with the version
of its spec (a hash of everything Batch would build it from: types, capacity, AMI, launch template version,
subnets, ...): a changed spec is a new pool, new jobs go there, and the sweep drains and deletes the old one.

Batch deletes a compute environment or a queue slowly, and keeps showing it (DELETING, then DELETED) for a while;
its name is taken meanwhile. Such a pool is never reused or waited on: the next job gets a new generation of the
pool, named after the version with `-g2`, `-g3`, ... (the first generation has no suffix), the one after the
newest generation Batch still shows, so a new name never collides with one Batch is still deleting.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from pydantic import Field

from functions.shared.domain.capacity.offers import Candidate
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.settings import Settings
from functions.shared.domain.core.vocabulary import Arch, CapacityType, Remedy
from functions.shared.domain.diagnosis.runnable import Diagnosis
from functions.shared.domain.fleet.batch import ComputeEnvironmentState, JobQueueState
from functions.shared.domain.reservations.reservation import RESERVATION_TAG

IMAGE_TYPE = "ECS_AL2023_NVIDIA"
ALLOCATION = {CapacityType.ON_DEMAND: "BEST_FIT_PROGRESSIVE", CapacityType.SPOT: "SPOT_PRICE_CAPACITY_OPTIMIZED"}
RESOURCE_TYPE = {CapacityType.ON_DEMAND: "EC2", CapacityType.SPOT: "SPOT"}
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
    DELETING = "DELETING"
    DELETED = "DELETED"


# A compute environment or job queue Batch shows in one of these is on its way out: never a pool to use.
GONE = frozenset({ComputeEnvironmentStatus.DELETING, ComputeEnvironmentStatus.DELETED})
GENERATION_MARK = "-g"


class Pool(DomainModel):
    """Names and shape of one pooled compute environment + job queue."""

    name: str
    instance_types: list[str]
    capacity: CapacityType
    arch: Arch
    zones: list[str] | None = Field(default=None, description="Zones its subnets are limited to (the request's)")
    key: str = Field(default="", description="The pool without its spec version: what versions of it share")
    version: str = Field(default="", description="Hash of its compute environment's spec")
    # A reservation's pool: the reservation (cr-...), its size as maxvCpus, the launch template that targets it.
    reservation: str | None = None
    max_vcpus: int | None = None
    launch_template: str | None = None


class QueueStatus(DomainModel):
    """EnsureJobQueue's answer: is the pool ready to take the job, and if it never will, what then."""

    job_queue: str
    compute_environment: str
    ready: bool
    checks: int
    status: str
    status_reason: str | None = None
    wait_until: str | None = Field(default=None, description="Wait until then (a reservation not begun yet)")
    remedy: Remedy | None = None
    next_index: int | None = None
    diagnosis: Diagnosis | None = None
    attempt: int | None = Field(default=None, description="The attempt whose pool this is (its checks and deadline)")
    since: str | None = Field(default=None, description="When EnsureJobQueue first looked at this attempt's pool")
    deadline: str | None = Field(default=None, description="The pool not ready by then, the attempt falls back")


class Generation(DomainModel):
    """One generation of a pool, as Batch shows its compute environment and job queue (either may be missing)."""

    number: int
    environment: ComputeEnvironmentState | None = None
    queue: JobQueueState | None = None

    @property
    def live(self) -> bool:
        """A pool to use: its compute environment exists and neither it nor its queue is being deleted."""
        return (
            self.environment is not None
            and self.environment.status not in GONE
            and (self.queue is None or self.queue.status not in GONE)
        )


def generation_name(pool: str, number: int) -> str:
    """The name of generation `number` of the pool (its compute environment's and its queue's)."""
    return pool if number <= 1 else f"{pool}{GENERATION_MARK}{number}"


def generation_of(pool: str, name: str) -> int | None:
    """Which generation of the pool `name` is, or None when it is not one of the pool's."""
    if name == pool:
        return 1
    suffix = name.removeprefix(pool + GENERATION_MARK)
    if suffix == name or not suffix.isdigit() or generation_name(pool, int(suffix)) != name:
        return None
    return int(suffix)


def pool_generation(
    pool: str, environments: list[ComputeEnvironmentState], queues: list[JobQueueState]
) -> tuple[Generation | None, int]:
    """The newest live generation of the pool Batch shows (None when none is), and the number a new generation
    takes: one past the newest Batch shows at all, DELETING and DELETED ones included (their names are taken)."""
    generations: dict[int, Generation] = {}
    for environment in environments:
        number = generation_of(pool, environment.name)
        if number is not None:
            generations.setdefault(number, Generation(number=number)).environment = environment
    for queue in queues:
        number = generation_of(pool, queue.name)
        if number is not None:
            generations.setdefault(number, Generation(number=number)).queue = queue
    live = [g for _, g in sorted(generations.items(), reverse=True) if g.live]
    return (live[0] if live else None), max(generations, default=0) + 1


def pool_for(candidate: Candidate, arch: Arch, prefix: str, zones: list[str] | None = None) -> Pool:
    """The pool a candidate runs in (same candidate, same zones, same pool: that is what makes it reusable).
    A request limited to zones gets a pool whose subnets are those zones' only, named after them."""
    capacity = "od" if candidate.capacity == CapacityType.ON_DEMAND else "spot"
    if (reserved := candidate.reserved) is not None:  # its id in the name, its zone's subnets
        capacity, zones = reserved.reservation_id, [reserved.zone]
    type_part = re.sub(r"[^A-Za-z0-9]", "-", candidate.instance_type)
    zone_part = "".join(f"-{zone.rsplit('-', 1)[-1]}" for zone in sorted(zones or []))
    return Pool(
        name=f"{prefix}-{capacity}-{Arch(arch).value.replace('_', '')}-{type_part}{zone_part}",
        instance_types=[candidate.instance_type],
        capacity=candidate.capacity,
        arch=arch,
        zones=sorted(zones) if zones else None,
        reservation=reserved.reservation_id if reserved else None,
        max_vcpus=reserved.total * candidate.vcpus if reserved else None,
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
    reserved = {RESERVATION_TAG: pool.reservation} if pool.reservation else {}
    resources: dict[str, Any] = {
        "type": RESOURCE_TYPE[pool.capacity],
        "allocationStrategy": ALLOCATION[pool.capacity],
        "minvCpus": 0,
        "desiredvCpus": 0,
        "maxvCpus": pool.max_vcpus or settings.max_vcpus,
        "instanceTypes": pool.instance_types,
        "subnets": subnets or settings.subnets,
        "securityGroupIds": settings.security_groups,
        "instanceRole": settings.instance_profile_arn,
        "ec2Configuration": ec2_configuration(pool, settings),
        "tags": {POOL_TAG: pool.name} | reserved,
    }
    template = pool.launch_template or settings.launch_template_name
    if template:
        # A version number, not $Latest: Batch resolves $Latest once, at creation, and never again, so a new
        # launch template version would otherwise never reach a pool. A new version is a new pool version.
        version = str(launch_template_version) if launch_template_version else "$Latest"
        resources["launchTemplate"] = {"launchTemplateName": template, "version": version}
    tags = {POOL_TAG: pool.name, CAPACITY_TAG: pool.capacity.value} | reserved
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
    pool: Pool,
    settings: Settings,
    subnets: list[str] | None = None,
    launch_template_version: int | None = None,
    generation: int = 1,
) -> tuple[Pool, dict[str, Any]]:
    """The pool named after its spec's version (and generation), and its `CreateComputeEnvironment` arguments."""
    spec = compute_environment_spec(pool, settings, subnets, launch_template_version)
    # A fair-share pool is a pool of its own: Batch cannot add a scheduling policy to a FIFO queue.
    version = spec_version(
        {**spec, "schedulingPolicy": settings.fair_share_policy} if settings.fair_share_policy else spec
    )
    name = generation_name(f"{pool.name}-{version}", generation)
    named = pool.model_copy(update={"name": name, "key": pool.name, "version": version})
    return named, compute_environment_spec(named, settings, subnets, launch_template_version)
