"""What the simulated AWS offers: instance types and their zones, the spot market, capacity regions, reservations,
Capacity Block offerings, and the identities that sign requests."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gpupilot.localcloud.world.base import _Strict
from gpupilot.localcloud.world.behaviour import BadHostsWorld


class InstanceTypeWorld(_Strict):
    sold: bool = Field(
        default=True,
        description="false: EC2 does not sell the type in this region (DescribeInstanceTypes there does not list it, "
        "and no zone offers it)",
    )
    offered: bool = Field(default=True, description="false: not offered in any zone")
    zones: list[str] | None = Field(default=None, description="Zones that offer it (default: all)")
    capacity: Literal["available", "none"] = Field(
        default="available", description="none: jobs stay RUNNABLE with CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"
    )
    ecs_agent: Literal["registers", "never_registers", "disconnects"] = Field(
        default="registers",
        description="never_registers: instances run but never join the ECS cluster (Batch gives no reason); "
        "disconnects: they join, then the agent disconnects before any job is placed",
    )
    gpu_registration: Literal["ok", "missing"] = Field(
        default="ok", description="missing: instances join without GPU resources (ECS_ENABLE_GPU_SUPPORT missing)"
    )
    compute_environment_invalid: str | None = Field(
        default=None,
        min_length=1,
        description="A compute environment including this type goes INVALID with this statusReason",
    )
    compute_environment_creating_seconds: float | None = Field(
        default=None,
        gt=0,
        description="A compute environment including this type is CREATING this long, in seconds of the local "
        "cloud's clock (default: half a second; Batch takes tens of seconds to minutes)",
    )
    bad_hosts: BadHostsWorld | None = Field(default=None, description="A share of its instances are bad GPU hosts")


class SpotWorld(_Strict):
    capacity: Literal["available", "none"] = "available"
    placement_score: int = Field(default=9, ge=1, le=10)
    hourly_usd: float | None = Field(default=None, gt=0)
    interrupt_after_seconds: float | None = Field(
        default=None,
        gt=0,
        description="Running spot instances of this type are reclaimed after this long (simulated seconds); the "
        "instance metadata gives the interruption notice 120 simulated seconds before",
    )


class RegionWorld(_Strict):
    """A capacity region beside the home one: its own zones, offerings and fleet behaviour, quotas and spot market,
    with the home region's defaults (its first two zones; every GPU type offered in every one of them)."""

    zones: list[str] = Field(min_length=1)
    instance_types: dict[str, InstanceTypeWorld] = Field(default_factory=dict)
    spot: dict[str, SpotWorld] = Field(default_factory=dict)
    quotas: dict[str, int] = Field(default_factory=dict, description="vCPU quota by EC2 Service Quotas code")


class ReservationWorld(_Strict):
    """A Capacity Reservation (or a Capacity Block for ML) the account holds: EC2 describes it with a generated id."""

    instance_type: str
    zone: str
    count: int = Field(default=1, ge=1, le=1000, description="Instances it holds")
    starts_in_seconds: float = Field(default=0, ge=0, description="It begins this long after the cloud starts")
    hours: float = Field(default=24, gt=0, description="How long it lasts (real hours: speedup does not shorten it)")
    capacity_block: bool = False
    match: Literal["open", "targeted"] = Field(
        default="open", description="open: matching on-demand launches use it; targeted: only launches naming it"
    )
    region: str | None = Field(default=None, description="Its region: home, or one of the world's `regions`")
    upfront_usd: float | None = Field(default=None, gt=0, description="A Capacity Block's fee, tagged on it")
    platform: Literal["Linux/UNIX", "Red Hat Enterprise Linux", "SUSE Linux", "Windows", "Ubuntu Pro"] = Field(
        default="Linux/UNIX", description="The operating system it reserves for (EC2's InstancePlatform)"
    )
    tenancy: Literal["default", "dedicated"] = "default"

    @model_validator(mode="after")
    def _blocks_are_targeted(self) -> ReservationWorld:
        # "Capacity Blocks are delivered as targeted Capacity Reservations in a single Availability Zone."
        if self.capacity_block and self.match != "targeted":
            self.match = "targeted"
        return self


class BlockOfferingWorld(_Strict):
    """A Capacity Block for ML EC2 offers (DescribeCapacityBlockOfferings), in the world's first zone by default."""

    instance_type: str
    count: int = Field(default=1, ge=1, le=64)
    hours: float = Field(
        default=24, gt=0, description="Its length (a block that begins today may be hours and minutes short of the "
        "whole days it is offered for: EC2 answers it to a question of the days it begins in)"
    )  # fmt: skip
    starts_in_seconds: float = Field(default=0, ge=0)
    upfront_usd: float = Field(gt=0)
    zone: str | None = None
    region: str | None = Field(default=None, description="The region EC2 offers it in: home unless one of `regions`")


class IdentityWorld(_Strict):
    """A principal of the local cloud: its ARN and the access key it signs requests with (SigV4, execute-api)."""

    arn: str = Field(pattern=r"^arn:aws:(iam|sts)::\d{12}:[A-Za-z0-9+=,.@_/-]{1,1024}$", description="Its IAM ARN")
    access_key_id: str = Field(pattern=r"^[A-Z0-9]{16,128}$")
    secret_access_key: str = Field(min_length=16, max_length=128)
