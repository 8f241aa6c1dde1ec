"""The world: its sections together, checked against each other and against what GPU Pilot knows (GPU types,
zones, quota codes), and read per region."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, model_validator

from functions.shared.domain.capacity.quotas import QUOTA_NAMES as QUOTA_CODES
from functions.shared.domain.teams.config import TeamsConfig
from gpupilot.localcloud.world.base import _Strict
from gpupilot.localcloud.world.behaviour import FaultsWorld, JobsWorld
from gpupilot.localcloud.world.capacity import (
    BlockOfferingWorld,
    IdentityWorld,
    InstanceTypeWorld,
    RegionWorld,
    ReservationWorld,
    SpotWorld,
)


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
