"""GPU catalog: which EC2 types can run CUDA jobs, from live descriptions or the bundled snapshot."""

from __future__ import annotations

from typing import Any

from functions.shared.adapters.ec2 import Ec2Catalog, load_snapshot
from functions.shared.domain.capacity.catalog import catalog_from_descriptions, gpu_type_from_description


def description(
    instance_type: str = "g5.xlarge",
    *,
    name: str = "A10G",
    manufacturer: str = "NVIDIA",
    count: int = 1,
    gpu_mib: int = 24576,
    vcpus: int = 4,
    memory_mib: int = 16384,
    archs: list[str] | None = None,
    partition: float | None = None,
) -> dict[str, Any]:
    """One `DescribeInstanceTypes` entry, as EC2 returns it."""
    gpu: dict[str, Any] = {"Name": name, "Manufacturer": manufacturer, "Count": count}
    gpu["MemoryInfo"] = {"SizeInMiB": gpu_mib}
    if partition is not None:
        gpu["GpuPartitionSize"] = partition
    return {
        "InstanceType": instance_type,
        "GpuInfo": {"Gpus": [gpu], "TotalGpuMemoryInMiB": gpu_mib * count},
        "VCpuInfo": {"DefaultVCpus": vcpus},
        "MemoryInfo": {"SizeInMiB": memory_mib},
        "ProcessorInfo": {"SupportedArchitectures": archs or ["x86_64"]},
    }


class FakeEc2:
    """Stands in for the EC2 client: a paginator that returns pages, or raises, and counts calls."""

    def __init__(self, pages: list[dict[str, Any]] | None = None, error: Exception | None = None) -> None:
        self.pages = pages or []
        self.error = error
        self.paginate_calls: list[dict[str, Any]] = []

    def get_paginator(self, operation: str) -> FakeEc2:
        assert operation == "describe_instance_types"
        return self

    def paginate(self, **kwargs: Any) -> list[dict[str, Any]]:
        self.paginate_calls.append(kwargs)
        if self.error is not None:
            raise self.error
        return self.pages


# -- one description ---------------------------------------------------------------------------
def test_nvidia_description_becomes_a_gpu_type_with_gib_sizes():
    # Given g5.xlarge as EC2 describes it (22888 MiB per GPU, 16384 MiB of memory)
    # When converting it
    gpu, reason = gpu_type_from_description(description(gpu_mib=22888, memory_mib=16384))

    # Then it is an NVIDIA A10G type with sizes in GiB, rounded to 0.1
    assert reason == ""
    assert gpu is not None
    assert (gpu.instance_type, gpu.gpu_model, gpu.manufacturer) == ("g5.xlarge", "A10G", "NVIDIA")
    assert (gpu.gpus, gpu.gpu_memory_gib, gpu.vcpus, gpu.memory_gib, gpu.arch) == (1, 22.4, 4, 16.0, "x86_64")


def test_amd_gpu_types_are_excluded_because_cuda_needs_nvidia():
    # Given an AMD Radeon type (g4ad)
    # When converting it
    gpu, reason = gpu_type_from_description(description("g4ad.xlarge", name="Radeon Pro V520", manufacturer="AMD"))

    # Then it is excluded with the reason
    assert gpu is None
    assert reason == "AMD GPU: CUDA needs NVIDIA"


def test_habana_accelerator_types_are_excluded_because_cuda_needs_nvidia():
    # Given a Habana Gaudi type (dl1)
    # When converting it
    gpu, reason = gpu_type_from_description(description("dl1.24xlarge", name="Gaudi HL-205", manufacturer="Habana"))

    # Then it is excluded with the reason
    assert gpu is None
    assert reason == "Habana GPU: CUDA needs NVIDIA"


def test_types_without_a_gpu_are_excluded():
    # Given a CPU-only type
    # When converting it
    gpu, reason = gpu_type_from_description({"InstanceType": "m5.large", "VCpuInfo": {"DefaultVCpus": 2}})

    # Then it is excluded as having no GPU
    assert (gpu, reason) == (None, "no GPU")


def test_fractional_gpu_types_are_excluded_because_batch_schedules_whole_gpus():
    # Given a g6f type that exposes half an L4
    # When converting it
    gpu, reason = gpu_type_from_description(description("g6f.large", name="L4", partition=0.5))

    # Then it is excluded as fractional
    assert gpu is None
    assert reason == "fractional GPU: Batch schedules whole GPUs"


def test_whole_gpu_partition_size_is_kept():
    # Given / When: an explicit partition size of one whole GPU
    gpu, _ = gpu_type_from_description(description(partition=1.0))

    # Then the type is kept
    assert gpu is not None


def test_arm64_types_are_detected_from_their_supported_architectures():
    # Given a Graviton g5g type
    # When converting it
    gpu, _ = gpu_type_from_description(description("g5g.xlarge", name="T4g", archs=["arm64"]))

    # Then its architecture is arm64
    assert gpu is not None
    assert gpu.arch == "arm64"


def test_catalog_from_descriptions_keeps_only_the_nvidia_whole_gpu_types():
    # Given one NVIDIA, one AMD and one fractional description
    descriptions = [
        description("g5.xlarge"),
        description("g4ad.xlarge", manufacturer="AMD"),
        description("g6f.large", partition=0.25),
    ]

    # When building the catalog
    result = catalog_from_descriptions(descriptions)

    # Then only the NVIDIA whole-GPU type remains
    assert list(result) == ["g5.xlarge"]


# -- the bundled snapshot ---------------------------------------------------------------------------
def test_bundled_snapshot_knows_g5_xlarge_as_an_a10g():
    # Given / When: the bundled snapshot
    snapshot = load_snapshot()

    # Then g5.xlarge is there with its A10G
    assert snapshot["g5.xlarge"].gpu_model == "A10G"
    assert snapshot["g5.xlarge"].gpus == 1


def test_bundled_snapshot_holds_only_nvidia_whole_gpu_types():
    # Given / When: the bundled snapshot
    snapshot = load_snapshot()

    # Then every type is NVIDIA, and no AMD (g4ad), Habana (dl1) or fractional (g6f) family is there
    assert {gpu.manufacturer for gpu in snapshot.values()} == {"NVIDIA"}
    assert not [t for t in snapshot if t.startswith(("g4ad.", "g6f.", "dl1.", "dl2q."))]
    assert all(gpu.gpus >= 1 for gpu in snapshot.values())


def test_bundled_snapshot_has_arm64_g5g_types():
    # Given / When: the bundled snapshot
    snapshot = load_snapshot()

    # Then the arm64 types are exactly the g5g family
    arm64 = {t for t, gpu in snapshot.items() if gpu.arch == "arm64"}
    assert arm64
    assert all(t.startswith("g5g.") for t in arm64)


# -- the Catalog adapter -------------------------------------------------------------------------
def test_catalog_falls_back_to_the_snapshot_when_ec2_fails():
    # Given an EC2 client whose paginator raises
    catalog = Ec2Catalog(ec2=FakeEc2(error=RuntimeError("AccessDenied")))

    # When asking for the GPU types
    types = catalog.gpu_types()

    # Then the bundled snapshot answers, and the source says so
    assert types == load_snapshot()
    assert catalog.source == "snapshot"


def test_catalog_told_not_to_ask_ec2_uses_the_snapshot():
    # Given / When: no client at all
    catalog = Ec2Catalog(live=False)
    types = catalog.gpu_types()

    # Then the snapshot answers
    assert "g5.xlarge" in types
    assert catalog.source == "snapshot"


def test_catalog_uses_live_descriptions_when_ec2_answers():
    # Given EC2 answering with two pages
    ec2 = FakeEc2(pages=[{"InstanceTypes": [description("g5.xlarge")]}, {"InstanceTypes": [description("g6.xlarge")]}])
    catalog = Ec2Catalog(ec2=ec2)

    # When asking for the GPU types
    types = catalog.gpu_types()

    # Then the live types (from every page) answer
    assert sorted(types) == ["g5.xlarge", "g6.xlarge"]
    assert catalog.source == "live"


def test_catalog_asks_ec2_only_for_gpu_families():
    # Given / When: a live fetch
    ec2 = FakeEc2(pages=[{"InstanceTypes": [description()]}])
    Ec2Catalog(ec2=ec2).gpu_types()

    # Then the request filters on the g* and p* families
    assert ec2.paginate_calls == [{"Filters": [{"Name": "instance-type", "Values": ["g*", "p*"]}]}]


def test_catalog_caches_live_types_within_the_ttl():
    # Given a live catalog with a one-hour TTL
    ec2 = FakeEc2(pages=[{"InstanceTypes": [description()]}])
    catalog = Ec2Catalog(ec2=ec2, ttl_seconds=3600)

    # When asking twice
    first = catalog.gpu_types()
    second = catalog.gpu_types()

    # Then EC2 is asked once and both answers are the same
    assert len(ec2.paginate_calls) == 1
    assert first == second


def test_catalog_asks_ec2_again_once_the_ttl_has_passed():
    # Given a live catalog whose cache expires at once
    ec2 = FakeEc2(pages=[{"InstanceTypes": [description()]}])
    catalog = Ec2Catalog(ec2=ec2, ttl_seconds=0)

    # When asking twice
    catalog.gpu_types()
    catalog.gpu_types()

    # Then EC2 is asked twice
    assert len(ec2.paginate_calls) == 2


def test_catalog_falls_back_to_the_snapshot_when_ec2_lists_no_nvidia_type():
    # Given EC2 answering with only an AMD type
    ec2 = FakeEc2(pages=[{"InstanceTypes": [description("g4ad.xlarge", manufacturer="AMD")]}])
    catalog = Ec2Catalog(ec2=ec2)

    # When asking for the GPU types
    types = catalog.gpu_types()

    # Then the snapshot answers rather than an empty catalog
    assert types == load_snapshot()
    assert catalog.source == "snapshot"
