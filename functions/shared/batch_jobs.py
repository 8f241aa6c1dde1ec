"""GPU job definitions and submission: pure specs, and a thin adapter over Batch."""

from __future__ import annotations

import hashlib
import math
from typing import Any

from pydantic import BaseModel

from functions.shared.lifecycle import batch_job_name
from functions.shared.models import Candidate, JobRequest
from functions.shared.selection import HOST_MEMORY_RESERVE

NVIDIA_ENVIRONMENT = {"NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}
# Exit code of the GPU preflight: the host's GPU is broken, so retry the attempt on another host.
PREFLIGHT_EXIT_CODE = 75
PREFLIGHT = (
    'nvidia-smi -L >/dev/null 2>&1 || { echo "gpupilot: no working NVIDIA GPU on this host" >&2; '
    f'exit {PREFLIGHT_EXIT_CODE}; }}; exec "$@"'
)
RETRY_ATTEMPTS = 3
RETRY_STRATEGY = {
    "attempts": RETRY_ATTEMPTS,
    "evaluateOnExit": [
        # Spot reclaim or host failure: the job did nothing wrong.
        {"onStatusReason": "Host EC2*", "action": "RETRY"},
        {"onExitCode": str(PREFLIGHT_EXIT_CODE), "action": "RETRY"},
        {"onReason": "*", "action": "EXIT"},
    ],
}


class SubmittedJob(BaseModel):
    batch_job_id: str
    job_queue: str
    job_definition: str
    attempt: int
    instance_type: str
    capacity: str


def job_definition_name(job_name: str) -> str:
    """`gpupilot-<name>`, shortened with a hash when Batch's 128-character limit would be exceeded."""
    name = f"gpupilot-{job_name}"
    if len(name) <= 128:
        return name
    digest = hashlib.sha256(job_name.encode()).hexdigest()[:10]
    return f"{name[:117]}-{digest}"


def job_resources(request: JobRequest, candidate: Candidate) -> dict[str, int]:
    """vCPUs, memory (MiB) and GPUs for the job: what it asked for, else its GPU share of the host."""
    share = request.gpus / candidate.gpus
    vcpus = request.vcpus or max(1, math.floor(candidate.vcpus * share))
    memory_gib = request.memory_gib or candidate.memory_gib * share * (1 - HOST_MEMORY_RESERVE)
    return {"GPU": request.gpus, "VCPU": vcpus, "MEMORY": max(512, int(memory_gib * 1024))}


def job_definition_spec(
    job_id: str, request: JobRequest, candidate: Candidate, preflight: bool = True
) -> dict[str, Any]:
    """`RegisterJobDefinition` arguments: GPU resource requirements, NVIDIA env, timeout, retries."""
    resources = job_resources(request, candidate)
    command = ["sh", "-c", PREFLIGHT, "gpupilot-preflight", *request.command] if preflight else request.command
    environment = NVIDIA_ENVIRONMENT | request.environment
    return {
        "jobDefinitionName": job_definition_name(request.name),
        "type": "container",
        "containerProperties": {
            "image": request.image,
            "command": command,
            "resourceRequirements": [{"type": kind, "value": str(value)} for kind, value in resources.items()],
            "environment": [{"name": k, "value": v} for k, v in sorted(environment.items())],
        },
        "timeout": {"attemptDurationSeconds": max(60, request.timeout_minutes * 60)},
        "retryStrategy": RETRY_STRATEGY,
        "propagateTags": True,
        "tags": {"gpupilot:job": job_id},
    }


class BatchSubmitter:
    """Registers the job definition and submits one attempt."""

    def __init__(self, batch: Any) -> None:
        self._batch = batch

    def find(self, job_id: str, attempt: int, job_queue: str, candidate: Candidate) -> SubmittedJob | None:
        """The Batch job already submitted for this attempt, if any (looked up by its unique name)."""
        summaries = self._batch.list_jobs(
            jobQueue=job_queue, filters=[{"name": "JOB_NAME", "values": [batch_job_name(job_id, attempt)]}]
        )["jobSummaryList"]
        if not summaries:
            return None
        found = summaries[0]
        return SubmittedJob(
            batch_job_id=found["jobId"],
            job_queue=job_queue,
            job_definition=found.get("jobDefinition", ""),
            attempt=attempt,
            instance_type=candidate.instance_type,
            capacity=candidate.capacity,
        )

    def submit(
        self, job_id: str, attempt: int, request: JobRequest, candidate: Candidate, job_queue: str
    ) -> SubmittedJob:
        definition = self._batch.register_job_definition(**job_definition_spec(job_id, request, candidate))
        response = self._batch.submit_job(
            jobName=batch_job_name(job_id, attempt),
            jobQueue=job_queue,
            jobDefinition=definition["jobDefinitionArn"],
            tags={"gpupilot:job": job_id, "gpupilot:attempt": str(attempt)},
        )
        return SubmittedJob(
            batch_job_id=response["jobId"],
            job_queue=job_queue,
            job_definition=definition["jobDefinitionArn"],
            attempt=attempt,
            instance_type=candidate.instance_type,
            capacity=candidate.capacity,
        )
