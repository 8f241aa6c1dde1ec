"""GPU job definitions as data: resources, NVIDIA environment, timeout, retries, roles, secrets. Pure."""

from __future__ import annotations

import hashlib
from typing import Any

from functions.shared.domain.capacity.fit import resources_on
from functions.shared.domain.capacity.offers import Candidate
from functions.shared.domain.core.vocabulary import CapacityType
from functions.shared.domain.fleet.batch import PREFLIGHT_EXIT_CODE, PREFLIGHT_NAME, RETRY_ATTEMPTS, runs_smoke
from functions.shared.domain.jobs.host_agent import agent_environment, checkpoint_policy, checkpoint_volume, wrapped
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.domain.teams.caps import consumable_resources

NVIDIA_ENVIRONMENT = {"NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}
PREFLIGHT = (
    'nvidia-smi -L >/dev/null 2>&1 || { echo "gpupilot: no working NVIDIA GPU on this host" >&2; '
    f'exit {PREFLIGHT_EXIT_CODE}; }}; exec "$@"'
)
# The CUDA-error exit code of the smoke test (payloads/cuda_smoke.py): the one of its host codes Batch retries
# (an Xid or an ECC error shows as a CUDA error); evaluateOnExit holds five conditions at most.
SMOKE_CUDA_ERROR_EXIT_CODE = 14
# Batch evaluates `evaluateOnExit` against each attempt's end and retries (on any host Batch places it on) when an
# entry says RETRY: "Specifies an array of up to 5 conditions" (EvaluateOnExit, AWS Batch API Reference). A pattern
# "can contain letters, numbers, periods (.), colons (:), and white space ... It can optionally end with an asterisk",
# and "The values aren't case sensitive"; "If none of the EvaluateOnExit conditions in a RetryStrategy match, then the
# job is retried", hence the last entry that exits for any reason. That the first entry that matches decides is
# assumed (no AWS page states the order), so the catch-all is last. An exit code is retried only where GPU Pilot's own
# GPU check gave it (the preflight's 75, the smoke test's 14): a job's own program exiting so is its own failure, and
# three runs of it would only bill it three times.


def _evaluate_on_exit(on_host_terminated: str, request: JobRequest | None) -> list[dict[str, str]]:
    entries = [
        # Spot reclaim, host failure, or a host the sweep quarantined and terminated: the job did nothing wrong.
        {"onStatusReason": "Host EC2*", "action": on_host_terminated},
        # The container runtime could not create, start or inspect the container on that host: the NVIDIA runtime's
        # hook failing (driver not loaded, NVML), a full thin pool. An image that cannot be pulled or a command that
        # cannot start is retried too (seconds each): Batch's patterns cannot tell them apart (no '-' or '/').
        {"onReason": "Cannot*", "action": "RETRY"},
    ]
    if request is not None and request.preflight:
        entries.append({"onExitCode": str(PREFLIGHT_EXIT_CODE), "action": "RETRY"})
    if request is not None and runs_smoke({"command": container_command(request)}):
        entries.append({"onExitCode": str(SMOKE_CUDA_ERROR_EXIT_CODE), "action": "RETRY"})
    return [*entries, {"onReason": "*", "action": "EXIT"}]


# A plain on-demand job's: no GPU check of GPU Pilot's runs in it.
RETRY_STRATEGY = {"attempts": RETRY_ATTEMPTS, "evaluateOnExit": _evaluate_on_exit("RETRY", None)}


def retry_strategy(
    capacity: CapacityType, reclaims_before_fallback: int = 1, request: JobRequest | None = None
) -> dict[str, Any]:
    """Batch's retries within an attempt. On-demand: a failed host (terminated, its container runtime failing, its
    GPU failing the request's preflight or smoke test) is retried on another host. Spot: the attempt ends at its
    `reclaims_before_fallback`-th reclaim (the job then goes to its next candidate), so Batch's retries are not spent
    waiting for spot again in a market that took it back. Batch counts every retry alike: at 1 a reclaim ends the
    attempt and a bad host's failure is still retried; above 1 the attempt gets that many Batch attempts in all,
    whatever ended each."""
    if capacity != CapacityType.SPOT:
        return {"attempts": RETRY_ATTEMPTS, "evaluateOnExit": _evaluate_on_exit("RETRY", request)}
    if reclaims_before_fallback <= 1:
        return {"attempts": RETRY_ATTEMPTS, "evaluateOnExit": _evaluate_on_exit("EXIT", request)}
    return {"attempts": reclaims_before_fallback, "evaluateOnExit": _evaluate_on_exit("RETRY", request)}


def batch_attempts(request: JobRequest) -> int:
    """The most Batch attempts one attempt of the job may take (its finish wait covers them all)."""
    return max(RETRY_ATTEMPTS, request.spot_reclaims_before_fallback)


# Where a job's output goes: Batch's own log group (the awslogs driver's default, created by Batch in every region
# it runs jobs in), each stream named `<prefix>/default/<ECS task id>` by the awslogs-stream-prefix option ("Use the
# awslogs log driver", AWS Batch User Guide), so the API's read grant covers GPU Pilot's streams and no others.
# Batch names an attempt's stream when it reaches RUNNING (DescribeJobs: logStreamName): it is read, never built.
JOB_LOG_GROUP = "/aws/batch/job"
JOB_LOG_STREAM_PREFIX = "gpupilot"
LOG_CONFIGURATION = {"logDriver": "awslogs", "options": {"awslogs-stream-prefix": JOB_LOG_STREAM_PREFIX}}

JOB_TAG = "gpupilot:job"
ATTEMPT_TAG = "gpupilot:attempt"


def _matches(pattern: str, value: str | None) -> bool:
    """Batch's glob: the whole value, or its start when the pattern ends with '*'; case does not matter."""
    pattern, value = pattern.lower(), (value or "").lower()
    return value.startswith(pattern[:-1]) if pattern.endswith("*") else value == pattern


def retry_action(strategy: dict[str, Any], exit_code: int | None, reason: str | None, status_reason: str | None) -> str:
    """RETRY or EXIT: what Batch does with an attempt that ended so, under `strategy` (attempts left aside)."""
    for entry in strategy.get("evaluateOnExit") or []:
        conditions = (
            ("onStatusReason", status_reason),
            ("onReason", reason),
            ("onExitCode", None if exit_code is None else str(exit_code)),
        )
        if all(_matches(entry[key], value) for key, value in conditions if key in entry):
            return str(entry["action"]).upper()
    return "RETRY"


def job_definition_name(job_name: str) -> str:
    """`gpupilot-<name>`, shortened with a hash when Batch's 128-character limit would be exceeded."""
    name = f"gpupilot-{job_name}"
    if len(name) <= 128:
        return name
    digest = hashlib.sha256(job_name.encode()).hexdigest()[:10]
    return f"{name[:117]}-{digest}"


def job_resources(request: JobRequest, candidate: Candidate) -> dict[str, int]:
    """vCPUs, memory (MiB) and GPUs for the job: what it asked for, else its GPU share of the host."""
    return resources_on(request, candidate.gpus, candidate.vcpus, candidate.memory_gib)


def container_command(request: JobRequest) -> list[str]:
    """The user's command as given (exec form, so an image's ENTRYPOINT receives it as its arguments), or,
    with `preflight`, wrapped in a shell that checks the GPU first (the image then needs `sh`)."""
    if not request.preflight:
        return list(request.command)
    return ["sh", "-c", PREFLIGHT, PREFLIGHT_NAME, *request.command]


def job_definition_spec(
    job_id: str,
    request: JobRequest,
    candidate: Candidate,
    *,
    job_role_arn: str,
    execution_role_arn: str,
    region: str,
    team_gpus: str | None = None,
    attempt: int = 1,
    hosts_bucket: str = "",
    home_region: str = "",
) -> dict[str, Any]:
    """`RegisterJobDefinition` arguments: GPU resource requirements, NVIDIA env, timeout, retries, roles, and the
    team's GPU cap it draws (`team_gpus`: its consumable resource; Batch holds the job until the team has room).

    Secrets are references: Batch (through ECS and the execution role) puts their values in the
    container, so no secret value passes through GPU Pilot, its workflow or its logs. The container
    cannot reach the instance metadata service (hop limit 1), so the region comes as AWS_REGION. The host agent
    knows the container as attempt `attempt` of the job by its variables (jobs/host_agent.py); a checkpointing job
    gets its directory, kept in `hosts_bucket` of `home_region`, and its program waits for its restore.
    """
    resources = job_resources(request, candidate)
    environment = NVIDIA_ENVIRONMENT | {"AWS_REGION": region, "AWS_DEFAULT_REGION": region} | request.environment
    environment |= agent_environment(job_id, attempt, request, hosts_bucket, home_region or region)
    checkpointing = checkpoint_policy(request) is not None
    command = container_command(request)
    container: dict[str, Any] = {
        "image": request.image,
        "command": wrapped(command) if checkpointing else command,
        "resourceRequirements": [{"type": kind, "value": str(value)} for kind, value in resources.items()],
        "environment": [{"name": k, "value": v} for k, v in sorted(environment.items())],
        "logConfiguration": LOG_CONFIGURATION,
    }
    if checkpointing:
        container |= checkpoint_volume(job_id)
    role = request.job_role_arn or job_role_arn
    if role:
        container["jobRoleArn"] = role
    if request.secrets:
        container["secrets"] = [{"name": name, "valueFrom": arn} for name, arn in sorted(request.secrets.items())]
        container["executionRoleArn"] = execution_role_arn
    return {
        "jobDefinitionName": job_definition_name(request.name),
        "type": "container",
        "containerProperties": container,
        "timeout": {"attemptDurationSeconds": max(60, request.timeout_minutes * 60)},
        "retryStrategy": retry_strategy(candidate.capacity, request.spot_reclaims_before_fallback, request),
        "propagateTags": True,
        "tags": {JOB_TAG: job_id},
    } | consumable_resources(team_gpus, request.gpus)
