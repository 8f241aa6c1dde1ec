"""The world file: what the simulated AWS offers and how its GPU fleet behaves."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from functions.shared.domain.capacity.quotas import QUOTA_NAMES as QUOTA_CODES
from functions.shared.domain.teams.config import TeamsConfig


class WorldError(ValueError):
    """The world file cannot be read or does not validate; the message names the field."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


BadHostSymptom = Literal["no_gpu_visible", "cuda_error", "boot_check_fails"]


class BadHostsWorld(_Strict):
    """A share of a type's instances are bad GPU hosts (which ones: the seed, repeatably)."""

    share: float = Field(ge=0, le=1, description="The share of launched instances that are bad (exactly, in each run)")
    symptom: BadHostSymptom = Field(
        description="no_gpu_visible: every container start fails with the NVIDIA runtime's NVML error; cuda_error: "
        "every job exits with the CUDA smoke test's CUDA-error code (14); boot_check_fails: the boot-time GPU check "
        "fails (the console shows it) and the instance registers without GPUs"
    )
    seed: int = Field(default=0, description="Which of the instances are bad")
    hold_seconds: float = Field(
        default=10,
        gt=0,
        description="How long each job a bad host fails holds it (ECS stopping the task, the agent cleaning up, Batch "
        "placing the next), in seconds of the local cloud's clock",
    )

    def is_bad(self, index: int) -> bool:
        """Whether the type's `index`-th launch (from 0) is bad: exactly `share` of every run of launches, at offsets
        the seed chooses."""
        phase = random.Random(self.seed).random()
        return math.floor((index + 1) * self.share + phase) > math.floor(index * self.share + phase)


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


class JobsWorld(_Strict):
    runtime_seconds: float = Field(default=2, ge=0, description="Simulated runtime of every job")
    exit_code: int = Field(default=0, ge=0, le=255)
    checkpoint_every_seconds: float | None = Field(
        default=None,
        gt=0,
        description="A checkpointing job's program writes its checkpoint this often (simulated seconds), besides "
        "when it is signalled; a resumed attempt runs what is left of runtime_seconds after its last checkpoint",
    )
    gpu_utilization: float | list[tuple[float, float]] = Field(
        default=0.9,
        description="Each job's GPU utilisation, 0-1: one number, or [[seconds, utilisation], ...] steps from the "
        "start of its attempt (simulated seconds)",
    )

    @field_validator("gpu_utilization")
    @classmethod
    def _utilizations(cls, value: float | list[tuple[float, float]]) -> float | list[tuple[float, float]]:
        steps = [(0.0, value)] if isinstance(value, int | float) else value
        if not steps or any(not 0 <= share <= 1 or at < 0 for at, share in steps):
            raise ValueError("a utilisation is between 0 and 1, from a step's second 0 or later")
        return value

    def utilization_at(self, seconds: float) -> float:
        """The utilisation `seconds` into an attempt: the last step begun by then (the first before any)."""
        if isinstance(self.gpu_utilization, int | float):
            return float(self.gpu_utilization)
        steps = sorted(self.gpu_utilization)
        return next((share for at, share in reversed(steps) if at <= seconds), steps[0][1])


class EventFaultsWorld(_Strict):
    drop: float = Field(default=0.0, ge=0, le=1, description="Probability a Batch event is never delivered")
    duplicate: float = Field(default=0.0, ge=0, le=1, description="Probability a Batch event is delivered twice")
    reorder: bool = Field(default=False, description="Some events are held back and delivered after the next")


# The calls a world can make AWS refuse (the market signals selection reads), and the errors AWS refuses them
# with, by error code: the HTTP status it comes with (the services' API references and botocore's models).
REFUSABLE: dict[str, dict[str, int]] = {
    "GetSpotPlacementScores": {
        "UnauthorizedOperation": 403,
        "MaxConfigLimitExceeded": 400,
        "RequestLimitExceeded": 503,
    },
    "DescribeSpotPriceHistory": {"UnauthorizedOperation": 403, "RequestLimitExceeded": 503},
    "GetServiceQuota": {"AccessDeniedException": 400, "TooManyRequestsException": 400, "ServiceException": 500},
    "GetProducts": {"AccessDeniedException": 400, "ThrottlingException": 400, "InternalErrorException": 500},
}


class FaultsWorld(_Strict):
    throttle: dict[Literal["batch", "ec2", "dynamodb", "stepfunctions", "ecs", "lambda", "cloudwatch"], float] = Field(
        default_factory=dict, description="Probability that a handler's call to the service is throttled"
    )
    refuse: dict[str, str] = Field(
        default_factory=dict,
        description="AWS operation -> the error code every handler's call to it is refused with (an organisation's "
        "policy, a daily limit, throttling that outlasts the retries)",
    )
    events: EventFaultsWorld = Field(default_factory=EventFaultsWorld)
    lambda_errors: float = Field(
        default=0.0, ge=0, le=1, description="Probability an invocation fails before the function runs"
    )
    seed: int | None = Field(default=None, description="Seed of the faults' random draws")

    @model_validator(mode="after")
    def _probabilities(self) -> FaultsWorld:
        wrong = sorted(service for service, p in self.throttle.items() if not 0 <= p <= 1)
        if wrong:
            raise ValueError(f"throttle: {', '.join(wrong)} must be probabilities from 0 to 1")
        for operation, code in self.refuse.items():
            if operation not in REFUSABLE:
                raise ValueError(f"refuse: unknown operation {operation!r}; valid: {', '.join(REFUSABLE)}")
            if code not in REFUSABLE[operation]:
                raise ValueError(
                    f"refuse.{operation}: unknown error {code!r}; valid: {', '.join(REFUSABLE[operation])}"
                )
        return self


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


class World(_Strict):
    region: str = "us-east-1"
    zones: list[str] = Field(default_factory=list, min_length=1, description="Default: the region's first two zones")
    instance_types: dict[str, InstanceTypeWorld] = Field(default_factory=dict)
    spot: dict[str, SpotWorld] = Field(default_factory=dict)
    quotas: dict[str, int] = Field(default_factory=dict, description="vCPU quota by EC2 Service Quotas code")
    regions: dict[str, RegionWorld] = Field(
        default_factory=dict, description="Capacity regions beside the home one (the top-level keys describe home)"
    )
    jobs: JobsWorld = Field(default_factory=JobsWorld)
    faults: FaultsWorld = Field(default_factory=FaultsWorld)
    capacity_reservations: list[ReservationWorld] = Field(default_factory=list)
    capacity_block_offerings: list[BlockOfferingWorld] = Field(default_factory=list)
    teams: TeamsConfig | None = Field(
        default=None, description="The local deployment's context `teams`: who may do what, budgets, GPU caps"
    )
    identities: dict[str, IdentityWorld] = Field(
        default_factory=dict,
        description="Principals with access keys: with any, the API verifies SigV4 and refuses what is unsigned",
    )

    @model_validator(mode="before")
    @classmethod
    def _default_zones(cls, data: Any) -> Any:
        """Every region without `zones` (home and each capacity region alike) takes its first two zones."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        data.setdefault("zones", default_zones(str(data.get("region") or "us-east-1")))
        if isinstance(data.get("regions"), dict):
            data["regions"] = {
                name: ({"zones": default_zones(str(name))} | described) if isinstance(described, dict) else described
                for name, described in data["regions"].items()
            }
        return data

    @model_validator(mode="after")
    def _one_identity_per_access_key(self) -> World:
        keys = [identity.access_key_id for identity in self.identities.values()]
        twice = sorted({key for key in keys if keys.count(key) > 1})
        if twice:
            raise ValueError(f"identities: access key {', '.join(twice)} is given to more than one identity")
        return self

    @model_validator(mode="after")
    def _known_types_zones_and_codes(self) -> World:
        import boto3

        regions = boto3.session.Session().get_available_regions("ec2")
        if self.region not in regions:
            raise ValueError(f"region: unknown region {self.region!r}; valid: {', '.join(sorted(regions))}")
        _check_region("", self.region, self)
        from functions.shared.adapters.ec2 import load_snapshot

        self._known_reservations(load_snapshot())
        for name, region in self.regions.items():
            if name not in regions:
                raise ValueError(f"regions: unknown region {name!r}; valid: {', '.join(sorted(regions))}")
            if name == self.region:
                raise ValueError(f"regions.{name}: the home region is described by the top-level keys")
            _check_region(f"regions.{name}.", name, region)
        return self

    def in_region(self, region: str) -> World:
        """The world as seen from one of its regions: that region's zones, offerings, spot market and quotas (the
        jobs and faults are the world's)."""
        if region == self.region:
            return self
        described = self.regions[region]
        return self.model_copy(
            update={
                "region": region,
                "zones": described.zones,
                "instance_types": described.instance_types,
                "spot": described.spot,
                "quotas": described.quotas,
                "regions": {},
            }
        )

    def deployment_context(self) -> dict[str, Any]:
        """The CDK context the world's deployment is synthesized with: its teams (`teams`), if any."""
        return {"teams": self.teams.model_dump(exclude_defaults=True)} if self.teams else {}

    @property
    def all_regions(self) -> list[str]:
        """Home first, then the world's other capacity regions."""
        return [self.region, *self.regions]

    def _known_reservations(self, known: Mapping[str, object]) -> None:
        """Reservations and offerings of GPU types the world knows, each in one of the world's regions and its zones."""
        held: list[tuple[str, ReservationWorld | BlockOfferingWorld]] = [
            *((f"capacity_reservations.{i}", r) for i, r in enumerate(self.capacity_reservations)),
            *((f"capacity_block_offerings.{i}", o) for i, o in enumerate(self.capacity_block_offerings)),
        ]
        for where, item in held:
            if item.instance_type not in known:
                raise ValueError(
                    f"{where}.instance_type: unknown GPU type {item.instance_type!r}; valid: {', '.join(sorted(known))}"
                )
            region = item.region or self.region
            if region not in self.all_regions:
                raise ValueError(
                    f"{where}.region: {region!r} is not a region of this world (valid: {', '.join(self.all_regions)})"
                )
            zones = self.zones if region == self.region else self.regions[region].zones
            if item.zone is not None and item.zone not in zones:
                raise ValueError(f"{where}.zone: {item.zone!r} not in the world's zones ({', '.join(zones)})")

    def instance(self, instance_type: str) -> InstanceTypeWorld:
        """The type's behaviour in this region (see in_region for another's)."""
        return self.instance_types.get(instance_type) or InstanceTypeWorld()

    def offered_zones(self, instance_type: str) -> list[str]:
        """The world's zones that offer the type."""
        spec = self.instance(instance_type)
        return [] if not (spec.offered and spec.sold) else list(spec.zones or self.zones)

    def unsold(self) -> set[str]:
        """The GPU types EC2 does not sell in this region."""
        return {name for name, spec in self.instance_types.items() if not spec.sold}

    def capacity(self, instance_type: str, spot: bool) -> str:
        """`available` or `none`, for on-demand or spot."""
        if spot and instance_type in self.spot:
            return self.spot[instance_type].capacity
        return self.instance(instance_type).capacity

    def compute_environment_invalid(self, instance_types: list[str]) -> str | None:
        """The statusReason of a compute environment of these types, if the world makes it INVALID."""
        reasons = [self.instance(t).compute_environment_invalid for t in instance_types]
        return next((reason for reason in reasons if reason), None)

    def compute_environment_creating(self, instance_types: list[str]) -> float | None:
        """How long a compute environment of these types is CREATING, if the world says (its slowest type's)."""
        said = [s for t in instance_types if (s := self.instance(t).compute_environment_creating_seconds) is not None]
        return max(said, default=None)


def default_zones(region: str) -> list[str]:
    """A region's first two zones, as the embedded EC2 describes them (`<region>a` and `b` if it knows none)."""
    from moto.ec2.models.availability_zones_and_regions import RegionsAndZonesBackend

    known = [zone.name for zone in RegionsAndZonesBackend.zones.get(region, [])]
    return known[:2] or [f"{region}a", f"{region}b"]


def _check_region(where: str, name: str, region: World | RegionWorld) -> None:
    """The region's types are GPU types GPU Pilot knows, its zones are its own, its quotas' codes EC2's."""
    from functions.shared.adapters.ec2 import load_snapshot

    known = load_snapshot()
    for section, names in (("instance_types", region.instance_types), ("spot", region.spot)):
        unknown = sorted(set(names) - set(known))
        if unknown:
            raise ValueError(
                f"{where}{section}: unknown GPU type {', '.join(unknown)}; valid: {', '.join(sorted(known))}"
            )
    for instance_type, spec in region.instance_types.items():
        strange = sorted(set(spec.zones or []) - set(region.zones))
        if strange:
            raise ValueError(
                f"{where}instance_types.{instance_type}.zones: {', '.join(strange)} not in the world's zones "
                f"({', '.join(region.zones)})"
            )
    foreign = [zone for zone in region.zones if not zone.startswith(name)]
    if foreign:
        raise ValueError(f"{where}zones: {', '.join(foreign)} not in region {name}")
    codes = sorted(set(region.quotas) - set(QUOTA_CODES))
    if codes:
        raise ValueError(f"{where}quotas: unknown code {', '.join(codes)}; valid: {', '.join(QUOTA_CODES)}")
    if any(value < 0 for value in region.quotas.values()):
        raise ValueError(f"{where}quotas: a vCPU quota is a number of vCPUs, 0 or more")


def load_world(path: str | Path | None) -> World:
    """The world in `path` (JSON), or the default world; WorldError names what is wrong."""
    if path is None:
        return World()
    try:
        raw = json.loads(Path(path).read_text())
    except OSError as error:
        raise WorldError(f"cannot read world file {path}: {error.strerror}") from error
    except ValueError as error:
        raise WorldError(f"world file {path} is not valid JSON: {error}") from error
    try:
        return World.model_validate(raw)
    except ValidationError as error:
        raise WorldError(f"world file {path}: {_explained(error.errors()[0])}") from error


def _explained(error: ErrorDetails) -> str:
    """One line naming the field: an unknown key lists the valid ones; our checks' messages name their own."""
    where = ".".join(str(part) for part in error["loc"])
    if error["type"] == "value_error":  # a model check: its message names the field
        message = str(error["ctx"]["error"]) if "ctx" in error else error["msg"]
        return f"{where}: {message}" if where else message
    if error["type"] == "extra_forbidden":
        valid = _keys_at(error["loc"][:-1])
        return f"{where}: unknown key; valid: {', '.join(valid)}"
    return f"{where or '(top level)'}: {error['msg']}"


def _keys_at(loc: tuple[int | str, ...]) -> list[str]:
    """The keys the model at `loc` (a path into World, map keys included) accepts."""
    shape: Any = World
    for part in loc:
        if isinstance(shape, type) and issubclass(shape, BaseModel):
            shape = shape.model_fields[str(part)].annotation
        elif get_origin(shape) is dict:
            shape = get_args(shape)[1]
        shape = next((arg for arg in get_args(shape) if arg is not type(None)), shape) if _optional(shape) else shape
    return list(shape.model_fields) if isinstance(shape, type) and issubclass(shape, BaseModel) else []


def _optional(shape: Any) -> bool:
    return type(None) in get_args(shape)
