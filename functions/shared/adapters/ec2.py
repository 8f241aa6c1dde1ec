"""Amazon EC2: the GPU catalog (DescribeInstanceTypes) and what the deployment's zones offer.

IAM: the EC2 Describe* actions have no resource types (grant on `*`).
"""

from __future__ import annotations

import json
import threading
import time
from importlib import resources
from typing import Any

from botocore.exceptions import ClientError

from functions.shared.adapters.base import ClientAdapter, TtlCache
from functions.shared.adapters.spot import Ec2SpotMarket
from functions.shared.domain.capacity.catalog import GpuType, catalog_from_descriptions
from functions.shared.domain.capacity.market import AvailabilitySnapshot

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = (
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeSubnets",
    "ec2:DescribeInstanceTypeOfferings",
    "ec2:DescribeLaunchTemplates",
)
SNAPSHOT_FILE = "gpu_catalog.json"
LIVE_TTL_SECONDS = 3600
OFFERINGS_TTL_SECONDS = 600

GPU_FAMILY_PATTERNS = ["g*", "p*"]


def load_snapshot() -> dict[str, GpuType]:
    """The bundled catalog snapshot, for offline use and when EC2 cannot be asked."""
    raw = json.loads(resources.files("functions.shared.data").joinpath(SNAPSHOT_FILE).read_text())
    return {item["instance_type"]: GpuType(**item) for item in raw["instance_types"]}


class Ec2Catalog(ClientAdapter):
    """Implements ports.Catalog: live, with an in-memory TTL cache; the snapshot when EC2 fails. Per region:
    DescribeInstanceTypes "Describes the specified instance types" of the Region it is asked in, and each region sells
    its own (a type may be sold in a capacity region and not at home)."""

    service = "ec2"

    def __init__(
        self,
        ec2: Any | None = None,
        ttl_seconds: float = LIVE_TTL_SECONDS,
        live: bool = True,
        region: str | None = None,
    ) -> None:
        super().__init__(ec2, region)
        self._live = live
        self._ttl = ttl_seconds
        self._cached: dict[str, GpuType] | None = None
        self._fetched_at = 0.0
        self._lock = threading.Lock()
        self._source = "snapshot"

    @property
    def source(self) -> str:
        return self._source

    def gpu_types(self) -> dict[str, GpuType]:
        """NVIDIA GPU types by instance type."""
        with self._lock:
            if self._cached is None or time.monotonic() - self._fetched_at >= self._ttl:
                self._cached, self._source = self._fetch()
                self._fetched_at = time.monotonic()
            return self._cached

    def _fetch(self) -> tuple[dict[str, GpuType], str]:
        if not self._live:
            return load_snapshot(), "snapshot"
        try:
            pages = self._aws.get_paginator("describe_instance_types").paginate(
                Filters=[{"Name": "instance-type", "Values": GPU_FAMILY_PATTERNS}]
            )
            descriptions = [item for page in pages for item in page["InstanceTypes"]]
        except Exception:
            return load_snapshot(), "snapshot"
        live = catalog_from_descriptions(descriptions)
        return (live, "live") if live else (load_snapshot(), "snapshot")


class Ec2Availability(ClientAdapter):
    """Implements ports.Availability: zones of our subnets and per-zone instance type offerings."""

    service = "ec2"

    def __init__(
        self, subnets: list[str], spot_market: Ec2SpotMarket, ec2: Any | None = None, region: str | None = None
    ) -> None:
        super().__init__(ec2, region)
        self._subnets = subnets
        self._spot = spot_market
        self._subnet_zones: dict[str, str] | None = None
        # Which zones offer which types changes over days, not minutes (shortages are the memory's job).
        self._offered = TtlCache(OFFERINGS_TTL_SECONDS)

    def launch_template_version(self, name: str) -> int | None:
        # Asked on every pool check, not cached: a new version reaches the next job at once.
        try:
            found = self._aws.describe_launch_templates(LaunchTemplateNames=[name])["LaunchTemplates"]
        except ClientError as error:
            if "NotFound" not in error.response.get("Error", {}).get("Code", ""):
                raise
            return None
        return int(found[0]["LatestVersionNumber"]) if found else None

    def placement_scores(self, instance_types: list[str]) -> dict[str, dict[str, int]]:
        return self._spot.placement_scores(instance_types)

    def zones(self) -> list[str]:
        """Zones GPU instances can launch in: those of the deployment's subnets (none without subnets)."""
        return sorted(set(self._zone_of().values()))

    def subnets_in(self, zones: list[str]) -> list[str]:
        return [subnet for subnet, zone in self._zone_of().items() if zone in zones]

    def _zone_of(self) -> dict[str, str]:
        """subnet -> its zone; a deployment's subnets keep their zones: asked once per process."""
        if not self._subnets:
            return {}
        if self._subnet_zones is None:
            found = self._aws.describe_subnets(SubnetIds=self._subnets)["Subnets"]
            self._subnet_zones = {s["SubnetId"]: s["AvailabilityZone"] for s in found}
        return dict(self._subnet_zones)

    def snapshot(self, instance_types: list[str], unavailable: set[str]) -> AvailabilitySnapshot:
        zones = self.zones()
        offered = self._offered.get(tuple(instance_types))
        if offered is None:
            offered = self._offerings(zones, instance_types)
            self._offered.put(tuple(instance_types), offered)
        return AvailabilitySnapshot(zones=zones, offered=offered, unavailable=unavailable)

    def _offerings(self, zones: list[str], instance_types: list[str]) -> dict[str, list[str]]:
        offered: dict[str, set[str]] = {}
        if zones and instance_types:
            pages = self._aws.get_paginator("describe_instance_type_offerings").paginate(
                LocationType="availability-zone",
                Filters=[{"Name": "location", "Values": zones}, {"Name": "instance-type", "Values": instance_types}],
            )
            for page in pages:
                for offering in page["InstanceTypeOfferings"]:
                    offered.setdefault(offering["InstanceType"], set()).add(offering["Location"])
        return {t: sorted(z) for t, z in offered.items()}
