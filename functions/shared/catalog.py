"""GPU catalog: NVIDIA instance types from EC2 `DescribeInstanceTypes` `GpuInfo`, live or from a snapshot.

CUDA needs NVIDIA: AMD (g4ad), Habana (dl1) and Inferentia/Trainium types are left out, and so are
fractional-GPU types (g6f), since Batch schedules whole GPUs.
"""

from __future__ import annotations

import json
import threading
import time
from importlib import resources
from typing import Any

from functions.shared.models import GpuType

SNAPSHOT_FILE = "gpu_catalog.json"
LIVE_TTL_SECONDS = 3600
GPU_FAMILY_PATTERNS = ["g*", "p*"]


def gpu_type_from_description(description: dict[str, Any]) -> tuple[GpuType | None, str]:
    """Turn one `DescribeInstanceTypes` entry into a GpuType, or say why it cannot run CUDA jobs."""
    instance_type = description["InstanceType"]
    gpus = (description.get("GpuInfo") or {}).get("Gpus") or []
    if not gpus:
        return None, "no GPU"
    gpu = gpus[0]
    manufacturer = gpu.get("Manufacturer", "")
    if manufacturer != "NVIDIA":
        return None, f"{manufacturer or 'unknown'} GPU: CUDA needs NVIDIA"
    if float(gpu.get("GpuPartitionSize", 1.0)) < 1.0:
        return None, "fractional GPU: Batch schedules whole GPUs"
    archs = (description.get("ProcessorInfo") or {}).get("SupportedArchitectures") or ["x86_64"]
    arch = "arm64" if "arm64" in archs else "x86_64"
    return (
        GpuType(
            instance_type=instance_type,
            gpu_model=gpu.get("Name", "unknown"),
            manufacturer=manufacturer,
            gpus=int(gpu.get("Count", 1)),
            gpu_memory_gib=round(gpu.get("MemoryInfo", {}).get("SizeInMiB", 0) / 1024, 1),
            vcpus=int(description["VCpuInfo"]["DefaultVCpus"]),
            memory_gib=round(description["MemoryInfo"]["SizeInMiB"] / 1024, 1),
            arch=arch,
        ),
        "",
    )


def catalog_from_descriptions(descriptions: list[dict[str, Any]]) -> dict[str, GpuType]:
    """The NVIDIA GPU types among `descriptions`, keyed by instance type."""
    catalog = {}
    for description in descriptions:
        gpu_type, _ = gpu_type_from_description(description)
        if gpu_type is not None:
            catalog[gpu_type.instance_type] = gpu_type
    return catalog


def load_snapshot() -> dict[str, GpuType]:
    """The bundled catalog snapshot, for offline use and when EC2 cannot be asked."""
    raw = json.loads(resources.files("functions.shared.data").joinpath(SNAPSHOT_FILE).read_text())
    return {item["instance_type"]: GpuType(**item) for item in raw["instance_types"]}


class Catalog:
    """Live catalog with an in-memory TTL cache; falls back to the snapshot when EC2 fails."""

    def __init__(self, ec2: Any | None = None, ttl_seconds: float = LIVE_TTL_SECONDS) -> None:
        self._ec2 = ec2
        self._ttl = ttl_seconds
        self._cached: dict[str, GpuType] | None = None
        self._fetched_at = 0.0
        self._lock = threading.Lock()
        self.source = "snapshot"

    def gpu_types(self) -> dict[str, GpuType]:
        """NVIDIA GPU types by instance type."""
        with self._lock:
            if self._cached is not None and time.monotonic() - self._fetched_at < self._ttl:
                return self._cached
            self._cached, self.source = self._fetch()
            self._fetched_at = time.monotonic()
            return self._cached

    def _fetch(self) -> tuple[dict[str, GpuType], str]:
        if self._ec2 is None:
            return load_snapshot(), "snapshot"
        try:
            pages = self._ec2.get_paginator("describe_instance_types").paginate(
                Filters=[{"Name": "instance-type", "Values": GPU_FAMILY_PATTERNS}]
            )
            descriptions = [item for page in pages for item in page["InstanceTypes"]]
        except Exception:
            return load_snapshot(), "snapshot"
        live = catalog_from_descriptions(descriptions)
        return (live, "live") if live else (load_snapshot(), "snapshot")
