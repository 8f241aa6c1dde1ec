"""Bad GPU hosts: which failures belong to the host and not to the job, the evidence kept against a host, and when
it is enough to quarantine it (domain/hosts/quarantine.py says what a quarantine is). Pure.

A GPU host whose driver failed keeps its ECS agent connected, so Batch keeps placing jobs on it and each fails in
seconds. Only host-side evidence is held against a host: the container runtime's reasons (the NVIDIA runtime hook,
the container runtime itself), the exit codes GPU Pilot's own GPU checks reserve, ECS's own health of the
instance, a failed boot-time GPU check, a registration without GPUs. A job's own failure (its exit code 1, running
out of memory, an image that cannot be pulled or started) never is.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from functions.shared.domain.core.clock import seconds_between
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.fleet.batch import PREFLIGHT_EXIT_CODE, BatchAttempt, BatchJobState
from functions.shared.domain.jobs.lifecycle import parse_batch_job_name

# Exit codes GPU Pilot's GPU checks reserve: the CUDA smoke test's (payloads/cuda_smoke.py, README "CUDA smoke
# test": 10 no NVIDIA driver, 11 the driver sees no GPU, 12 a kernel's result is wrong, 13 out of GPU memory,
# 14 any other CUDA error) and the preflight's (batch.PREFLIGHT_EXIT_CODE: nvidia-smi did not answer).
# A job that exits with one of them says its host's GPU failed it only when that check gave the code: 10 to 14 from a
# job that runs the smoke test (`BatchJobState.smoke`), 75 from one that runs the preflight (`BatchJobState.preflight`;
# 75 is also sysexits' EX_TEMPFAIL). Any other program exiting so is its own failure: two user programs exiting 11 on
# one host are not evidence against a healthy one.
HOST_EXIT_CODES = {
    10: "no NVIDIA driver could be loaded",
    11: "the driver sees no GPU",
    12: "a GPU kernel's result is wrong",
    13: "the GPU is out of memory before the check could allocate",
    14: "a CUDA error",
    75: "the GPU preflight found no working NVIDIA GPU",
}
# The NVIDIA container runtime's prestart hook failing, in the container's reason (CannotStartContainerError):
# "OCI runtime create failed: ... error running hook #0: error running hook: exit status 1, stdout: , stderr:
# nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown" (NVIDIA/nvidia-container-
# toolkit#260); "... nvml error: driver/library version mismatch" (#394); "nvidia-container-cli: initialization error:
# driver rpc error: timed out" on ECS (bottlerocket-os/bottlerocket#3960). Batch keeps 255 characters of the
# reason (AttemptContainerDetail.reason), which can cut the long docker message before "nvidia-container-cli": on
# Batch's NVIDIA AMI the only OCI hook is NVIDIA's, so "error running hook" names it too.
NVIDIA_RUNTIME_MARKERS = ("nvidia-container-cli", "nvml error", "error running hook", "driver rpc error")
# ECS's stopped-task error codes for a container runtime that misbehaves on the instance ("Stopped tasks error
# codes", Amazon ECS Developer Guide): "ContainerRuntimeTimeoutError ... can't transition to either a RUNNING or
# STOPPED state within the timeout period" (DockerTimeoutError before it), "CannotInspectContainerError ... can't
# describe the container through the container runtime", "CannotStopContainerError".
RUNTIME_ERRORS = (
    "ContainerRuntimeTimeoutError",
    "DockerTimeoutError",
    "CannotInspectContainerError",
    "CannotStopContainerError",
)
# "CannotCreateContainerError: API error (500): devmapper: Thin Pool has ... free data blocks": the thin pool storage
# on the container instance is full (ECS Developer Guide, CannotCreateContainerError).
DISK_FULL_MARKERS = ("devmapper", "thin pool", "no space left on device")
# The attempt's host went away (a spot reclaim, a termination: ours included): "Host EC2 (instance i-...)
# terminated." Not a bad GPU; Batch retries it (job_definitions.retry_strategy).
HOST_GONE = "host ec2"
# A job's own failures: its memory ("OutOfMemoryError: Container killed due to memory usage", exit 137,
# aws/amazon-ecs-agent#1187), an image it names that cannot be pulled (CannotPullContainerError: image name,
# registry auth, network), a command its image cannot start ("CannotStartContainerError: ... exec: "...":
# executable file not found", nextflow-io/nextflow#5657).
JOB_ERRORS = ("OutOfMemoryError", "CannotPullContainerError", "CannotStartContainerError")
OUT_OF_MEMORY_EXIT_CODE = 137

# Quarantine: host-attributed failures of this many different jobs within the window (one failed boot check, one
# registration without GPUs, or ECS calling the instance IMPAIRED is enough on its own).
JOBS_TO_QUARANTINE = 2
DEFAULT_WINDOW_SECONDS = 3600.0


class Blame(StrEnum):
    """Whose fault an attempt's end was."""

    HOST = "host"
    JOB = "job"
    HOST_GONE = "host_gone"
    NONE = "none"


class Symptom(StrEnum):
    """What a bad host showed."""

    NVIDIA_RUNTIME = "nvidia_runtime"
    CONTAINER_RUNTIME = "container_runtime"
    HOST_DISK_FULL = "host_disk_full"
    GPU_CHECK_EXIT = "gpu_check_exit"


class Attribution(DomainModel):
    blame: Blame
    symptom: Symptom | None = None
    why: str = ""


def attribute(attempt: BatchAttempt, preflight: bool = False, smoke: bool = False) -> Attribution:
    """Whose fault one Batch attempt's end was, and what it showed: from the container's reason, the attempt's
    statusReason and its exit code (a GPU check's only when the job runs that check: `preflight`, `smoke`)."""
    reason = attempt.reason or ""
    lowered = reason.lower()
    if any(marker in lowered for marker in NVIDIA_RUNTIME_MARKERS):
        return Attribution(blame=Blame.HOST, symptom=Symptom.NVIDIA_RUNTIME, why=reason)
    if reason.startswith(RUNTIME_ERRORS):
        return Attribution(blame=Blame.HOST, symptom=Symptom.CONTAINER_RUNTIME, why=reason)
    if reason.startswith("CannotCreateContainerError") and any(m in lowered for m in DISK_FULL_MARKERS):
        return Attribution(blame=Blame.HOST, symptom=Symptom.HOST_DISK_FULL, why=reason)
    if (attempt.status_reason or "").lower().startswith(HOST_GONE):
        return Attribution(blame=Blame.HOST_GONE, why=attempt.status_reason or "")
    if reason.startswith(JOB_ERRORS) or attempt.exit_code == OUT_OF_MEMORY_EXIT_CODE:
        return Attribution(blame=Blame.JOB, why=reason or f"exit code {attempt.exit_code}")
    checked = preflight if attempt.exit_code == PREFLIGHT_EXIT_CODE else smoke
    if attempt.exit_code in HOST_EXIT_CODES and checked:
        why = f"exit code {attempt.exit_code}: {HOST_EXIT_CODES[attempt.exit_code]}"
        return Attribution(blame=Blame.HOST, symptom=Symptom.GPU_CHECK_EXIT, why=why)
    if attempt.exit_code == 0:
        return Attribution(blame=Blame.NONE)
    if attempt.exit_code is not None or reason:
        return Attribution(blame=Blame.JOB, why=reason or f"exit code {attempt.exit_code}")
    return Attribution(blame=Blame.NONE)


class HostFault(DomainModel):
    """One attempt that failed because of its host: one piece of evidence against it."""

    container_instance_arn: str
    batch_job_id: str
    attempt: int = Field(description="Batch's attempt number within its job, from 1")
    job_id: str | None = Field(default=None, description="GPU Pilot's job, when it is one")
    pool: str = Field(default="", description="The job queue (GPU Pilot's pool) it ran from")
    symptom: Symptom
    why: str
    at: str = Field(description="When the attempt ended")


def host_faults(job: BatchJobState, at: str) -> list[HostFault]:
    """The host-attributed failures among a Batch job's attempts (each names the host it ran on)."""
    parsed = parse_batch_job_name(job.job_name)
    faults = []
    for number, attempt in enumerate(job.attempts, start=1):
        if not attempt.container_instance_arn or (attempt.stopped_at is None and attempt.exit_code is None):
            continue  # not placed, or not ended yet
        blamed = attribute(attempt, job.preflight, job.smoke)
        if blamed.blame == Blame.HOST and blamed.symptom is not None:
            faults.append(
                HostFault(
                    container_instance_arn=attempt.container_instance_arn,
                    batch_job_id=job.job_id,
                    attempt=number,
                    job_id=parsed[0] if parsed else None,
                    pool=job.job_queue.rsplit("/", 1)[-1],
                    symptom=blamed.symptom,
                    why=blamed.why[:255],
                    at=attempt.stopped_at or at,
                )
            )
    return faults


def jobs_hit(faults: list[HostFault]) -> list[str]:
    """The different jobs the faults hit (GPU Pilot's job id, else Batch's), in the order they were hit."""
    seen: dict[str, None] = {}
    for fault in sorted(faults, key=lambda f: f.at):
        seen.setdefault(fault.job_id or fault.batch_job_id, None)
    return list(seen)


def recent(faults: list[HostFault], at: str, window_seconds: float) -> list[HostFault]:
    return [f for f in faults if seconds_between(f.at, at) <= window_seconds]


def enough_to_quarantine(faults: list[HostFault]) -> bool:
    """Failures of at least JOBS_TO_QUARANTINE different jobs: one job failing twice could be that job's own doing."""
    return len({f.batch_job_id for f in faults}) >= JOBS_TO_QUARANTINE
