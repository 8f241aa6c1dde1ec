"""Amazon EC2: the GPU catalog (DescribeInstanceTypes) and what the deployment's zones offer.

IAM: the EC2 Describe* actions have no resource types (grant on `*`).
"""

from __future__ import annotations

import json
import threading
import time
from importlib import resources
from typing import Any

from functions.shared.adapters.base import ClientAdapter
from functions.shared.domain.catalog import GpuType, catalog_from_descriptions
from functions.shared.domain.selection import AvailabilitySnapshot

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("ec2:DescribeInstanceTypes", "ec2:DescribeSubnets", "ec2:DescribeInstanceTypeOfferings")
SNAPSHOT_FILE = "gpu_catalog.json"
LIVE_TTL_SECONDS = 3600
GPU_FAMILY_PATTERNS = ["g*", "p*"]


def load_snapshot() -> dict[str, GpuType]:
    """The bundled catalog snapshot, for offline use and when EC2 cannot be asked."""
    raw = json.loads(resources.files("functions.shared.data").joinpath(SNAPSHOT_FILE).read_text())
    return {item["instance_type"]: GpuType(**item) for item in raw["instance_types"]}


class Ec2Catalog(ClientAdapter):
    """Implements ports.Catalog: live, with an in-memory TTL cache; the snapshot when EC2 fails."""

    service = "ec2"

    def __init__(self, ec2: Any | None = None, ttl_seconds: float = LIVE_TTL_SECONDS, live: bool = True) -> None:
        super().__init__(ec2)
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

    def __init__(self, subnets: list[str], ec2: Any | None = None) -> None:
        super().__init__(ec2)
        self._subnets = subnets

    def zones(self) -> list[str]:
        """Zones GPU instances can launch in: those of the deployment's subnets (none without subnets)."""
        if not self._subnets:
            return []
        found = self._aws.describe_subnets(SubnetIds=self._subnets)["Subnets"]
        return sorted({s["AvailabilityZone"] for s in found})

    def snapshot(self, instance_types: list[str], unavailable: set[str]) -> AvailabilitySnapshot:
        zones = self.zones()
        offered: dict[str, set[str]] = {}
        if zones and instance_types:
            pages = self._aws.get_paginator("describe_instance_type_offerings").paginate(
                LocationType="availability-zone",
                Filters=[{"Name": "location", "Values": zones}, {"Name": "instance-type", "Values": instance_types}],
            )
            for page in pages:
                for offering in page["InstanceTypeOfferings"]:
                    offered.setdefault(offering["InstanceType"], set()).add(offering["Location"])
        return AvailabilitySnapshot(
            zones=zones, offered={t: sorted(z) for t, z in offered.items()}, unavailable=unavailable
        )
