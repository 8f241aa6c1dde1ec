"""Whether a GPU type can run a request at all, and why not: the request's own filters (arch, instance_types,
gpu_models), its shape (GPUs, GPU memory, vCPUs, memory), and what Batch can launch (its NVIDIA AMIs, the pools'
maxvCpus); and on which capacity types the request runs. Pure rules of the planning walk (planning.py)."""

from __future__ import annotations

import math

from functions.shared.domain.capacity.catalog import GpuType
from functions.shared.domain.core.vocabulary import Arch, CapacityPreference, CapacityType, counted
from functions.shared.domain.requests.job_request import JobRequest

# ECS and the OS keep some host memory; a job asking for all of it would never be placed.
HOST_MEMORY_RESERVE = 0.1
# Batch's ECS_AL2023_NVIDIA AMI does not support these families, and its AL2 AMIs are retired.
NO_BATCH_NVIDIA_AMI = ("p3.", "p3dn.", "g3.", "g3s.")
Problem = tuple[str | None, str]  # (the request field that rules a type out, if one does; why)


def filter_problem(request: JobRequest, gpu: GpuType) -> Problem | None:
    """Why the request's own type filters (arch, instance_types, gpu_models) leave `gpu` out."""
    if gpu.arch != request.arch:
        return "arch", f"{gpu.arch} instance, request is {request.arch}"
    if request.instance_types and gpu.instance_type not in request.instance_types:
        return "instance_types", "not in the request's instance_types"
    if request.gpu_models and gpu.gpu_model.lower() not in {m.lower() for m in request.gpu_models}:
        return "gpu_models", f"GPU model {gpu.gpu_model} not in the request's gpu_models"
    return None


def fit_problem(request: JobRequest, gpu: GpuType) -> Problem | None:
    """Why `gpu` cannot hold the request: its filters, then its shape."""
    problem = filter_problem(request, gpu)
    if problem:
        return problem
    if gpu.gpus < request.gpus:
        return "gpus", f"{counted(gpu.gpus, 'GPU')}, request needs {request.gpus}"
    if request.min_gpu_memory_gib and gpu.gpu_memory_gib < request.min_gpu_memory_gib:
        return "min_gpu_memory_gib", f"{gpu.gpu_memory_gib} GiB per GPU, request needs {request.min_gpu_memory_gib}"
    if request.vcpus and gpu.vcpus < request.vcpus:
        return "vcpus", f"{gpu.vcpus} vCPUs, request needs {request.vcpus}"
    usable_memory = gpu.memory_gib * (1 - HOST_MEMORY_RESERVE)
    if request.memory_gib and usable_memory < request.memory_gib:
        return "memory_gib", f"{usable_memory:.1f} GiB usable memory, request needs {request.memory_gib}"
    return None


def fits(request: JobRequest, gpu: GpuType) -> bool:
    """Whether the type's shape can run the request (before zones, prices and quotas)."""
    return fit_problem(request, gpu) is None


def type_problem(request: JobRequest, gpu: GpuType, arm64_ami: bool, max_vcpus: int | None) -> Problem | None:
    """Why `gpu` can never run the request here: it does not fit it, or Batch could not launch it."""
    problem = fit_problem(request, gpu)
    if not problem and gpu.instance_type.startswith(NO_BATCH_NVIDIA_AMI):
        problem = None, "no AWS Batch NVIDIA AMI supports this family (ECS_AL2023_NVIDIA excludes p3/g3)"
    if not problem and gpu.arch == Arch.ARM64 and not arm64_ami:
        problem = "arch", "Graviton GPU: AWS Batch has no NVIDIA AMI for arm64 and no custom one is configured"
    if not problem and max_vcpus and gpu.vcpus > max_vcpus:
        problem = None, f"{gpu.vcpus} vCPUs exceed the pools' maxvCpus {max_vcpus}: Batch would never launch it"
    return problem


def capacities_for(request: JobRequest) -> list[CapacityType]:
    """Capacity types to try beside reservations, in order (none for reserved only; on-demand with the fallback)."""
    if request.asks_reserved:
        return [CapacityType.ON_DEMAND] if request.reservation_fallback else []
    if request.capacity == CapacityPreference.SPOT:
        return [CapacityType.SPOT]
    if request.capacity == CapacityPreference.SPOT_FIRST:
        return [CapacityType.SPOT, CapacityType.ON_DEMAND]
    return [CapacityType.ON_DEMAND]


def resources_on(request: JobRequest, gpus: int, vcpus: int, memory_gib: float) -> dict[str, int]:
    """vCPUs, memory (MiB) and GPUs the job holds on an instance of that shape: what it asked for, else its GPU share
    of the host."""
    share = request.gpus / gpus if gpus else 1.0
    held_vcpus = request.vcpus or max(1, math.floor(vcpus * share))
    held_memory_gib = request.memory_gib or memory_gib * share * (1 - HOST_MEMORY_RESERVE)
    return {"GPU": request.gpus, "VCPU": held_vcpus, "MEMORY": max(512, int(held_memory_gib * 1024))}
