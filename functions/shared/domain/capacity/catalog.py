"""GPU catalog entries from EC2 `DescribeInstanceTypes` `GpuInfo`: which types can run CUDA jobs. Pure.

CUDA needs NVIDIA: AMD (g4ad), Habana (dl1) and Inferentia/Trainium types are left out, and so are
fractional-GPU types (g6f), since Batch schedules whole GPUs.
"""

from __future__ import annotations

from typing import Any

from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.vocabulary import Arch


class GpuType(DomainModel):
    """One NVIDIA GPU instance type, as the catalog knows it."""

    instance_type: str
    gpu_model: str
    manufacturer: str
    gpus: int
    gpu_memory_gib: float
    vcpus: int
    memory_gib: float
    arch: Arch

    @property
    def family(self) -> str:
        """`g5` of `g5.xlarge`."""
        return self.instance_type.split(".", 1)[0]


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
    return (
        GpuType(
            instance_type=instance_type,
            gpu_model=gpu.get("Name", "unknown"),
            manufacturer=manufacturer,
            gpus=int(gpu.get("Count", 1)),
            gpu_memory_gib=round(gpu.get("MemoryInfo", {}).get("SizeInMiB", 0) / 1024, 1),
            vcpus=int(description["VCpuInfo"]["DefaultVCpus"]),
            memory_gib=round(description["MemoryInfo"]["SizeInMiB"] / 1024, 1),
            arch=Arch.ARM64 if "arm64" in archs else Arch.X86_64,
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
