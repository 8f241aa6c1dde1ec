"""AWS Batch as plain data: a job's state (from DescribeJobs or a state-change event) and a compute
environment's state, read once at the edge into our time convention. Pure."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from functions.shared.domain.core.clock import iso_from_millis, normalize_iso, now_iso
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.fleet.instances import ContainerInstanceState as ContainerInstanceState
from functions.shared.domain.fleet.instances import Ec2InstanceState as Ec2InstanceState
from functions.shared.domain.fleet.instances import FleetState as FleetState


def _millis(value: Any) -> float | None:
    """A Batch time in epoch milliseconds; 0 (what some describers give a job that never started) is none."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else None


def _iso(millis: Any) -> str | None:
    value = _millis(millis)
    return iso_from_millis(value) if value is not None else None


def billed_seconds(job: dict[str, Any]) -> float | None:
    """Seconds the job held its instance: every Batch attempt (retries count), or None before it ran."""
    spans = [
        (stopped - started) / 1000
        for a in job.get("attempts") or []
        if (started := _millis(a.get("startedAt"))) is not None and (stopped := _millis(a.get("stoppedAt"))) is not None
    ]
    if spans:
        return max(0.0, sum(spans))
    started, stopped = _millis(job.get("startedAt")), _millis(job.get("stoppedAt"))
    if started is not None and stopped is not None:
        return max(0.0, (stopped - started) / 1000)
    return None


class BatchAttempt(DomainModel):
    """One of Batch's own attempts of a job (`attempts[]` of DescribeJobs): where it ran and how it ended."""

    container_instance_arn: str | None = Field(default=None, description="The ECS container instance that hosted it")
    started_at: str | None = None
    stopped_at: str | None = None
    exit_code: int | None = None
    reason: str | None = Field(default=None, description="The container's reason (255 characters at most)")
    status_reason: str | None = Field(default=None, description="The attempt's statusReason")

    @classmethod
    def from_batch(cls, attempt: dict[str, Any]) -> BatchAttempt:
        container = attempt.get("container") or {}
        placed, exit_code = container.get("containerInstanceArn"), container.get("exitCode")
        return cls(
            # moto names a placeholder before placement ("TBD"); AWS gives an ARN or nothing.
            container_instance_arn=placed if isinstance(placed, str) and placed.startswith("arn:") else None,
            started_at=_iso(attempt.get("startedAt")),
            stopped_at=_iso(attempt.get("stoppedAt")),
            exit_code=exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None,
            reason=container.get("reason") if isinstance(container.get("reason"), str) else None,
            status_reason=attempt.get("statusReason") if isinstance(attempt.get("statusReason"), str) else None,
        )


# The GPU preflight wraps the job's command as `sh -c <preflight> gpupilot-preflight <command...>`
# (job_definitions.container_command): a job runs it when its container's command (DescribeJobs' and the state-change
# event's ContainerDetail) says so. Only then is its exit 75 the preflight's verdict on the host; any other program's
# 75 is its own (sysexits' EX_TEMPFAIL).
PREFLIGHT_NAME = "gpupilot-preflight"
# Its exit code when the host's GPU is broken (nvidia-smi did not answer): Batch retries it on another host.
PREFLIGHT_EXIT_CODE = 75
# The CUDA smoke test (payloads/cuda_smoke.py) runs as `python3 -c <payload> gpupilot-cuda-smoke` (`submit --smoke`):
# its argument names it, as the preflight's $0 does. Only then are its exits 10 to 14 its verdict on the host; any
# other program's are its own.
SMOKE_NAME = "gpupilot-cuda-smoke"
# Batch runs an on-demand attempt up to this many times (the job definition's retryStrategy.attempts: a host that
# failed, a GPU check that failed it), each up to the attempt's timeout.
RETRY_ATTEMPTS = 3


def runs_preflight(container: dict[str, Any]) -> bool:
    command = container.get("command")
    return isinstance(command, list) and command[:2] == ["sh", "-c"] and command[3:4] == [PREFLIGHT_NAME]


def runs_smoke(container: dict[str, Any]) -> bool:
    """Whether the command is the CUDA smoke test, wrapped by the preflight or not."""
    command = container.get("command")
    if runs_preflight(container) and isinstance(command, list):
        command = command[4:]
    return isinstance(command, list) and command[1:2] == ["-c"] and command[3:4] == [SMOKE_NAME]


# What Batch says of an attempt whose instance went away under it (a spot reclaim, or a host failure):
# `Host EC2 (instance i-0123...) terminated.` (the job's attempts[].statusReason).
HOST_TERMINATED_PREFIX = "Host EC2"


class BatchJobState(DomainModel):
    """One Batch job as `DescribeJobs` (or a `Batch Job State Change` event's detail) shows it."""

    job_id: str
    job_name: str = ""
    job_queue: str = ""
    job_definition: str = ""
    status: str
    status_reason: str | None = None
    created_at: str | None = None
    started_at: str | None = None
    stopped_at: str | None = None
    exit_code: int | None = None
    container_reason: str | None = None
    container_instance_arn: str | None = Field(default=None, description="The ECS container instance it ran on")
    runtime_seconds: float | None = Field(default=None, description="Summed over Batch's own attempts")
    attempts: list[BatchAttempt] = Field(default_factory=list, description="Batch's own attempts, oldest first")
    host_terminations: list[str] = Field(
        default_factory=list, description="Batch's words for each of its attempts whose host was terminated"
    )
    host_terminated: bool = Field(default=False, description="Its last attempt ended with its host's termination")
    log_stream: str | None = Field(default=None, description="Its last attempt's log stream, named at RUNNING")
    preflight: bool = Field(default=False, description="Its command runs GPU Pilot's GPU preflight first")
    smoke: bool = Field(default=False, description="Its command is GPU Pilot's CUDA smoke test")

    @classmethod
    def from_batch(cls, job: dict[str, Any]) -> BatchJobState:
        container = job.get("container") or {}
        exit_code = container.get("exitCode")
        last_attempt = ((job.get("attempts") or [{}])[-1] or {}).get("container") or {}
        placed = container.get("containerInstanceArn") or last_attempt.get("containerInstanceArn")
        reasons = [str((a or {}).get("statusReason") or "") for a in job.get("attempts") or []]
        return cls(
            job_id=str(job.get("jobId") or ""),
            job_name=str(job.get("jobName") or ""),
            job_queue=str(job.get("jobQueue") or ""),
            job_definition=str(job.get("jobDefinition") or ""),
            status=str(job.get("status") or "UNKNOWN"),
            status_reason=job.get("statusReason"),
            created_at=_iso(job.get("createdAt")),
            started_at=_iso(job.get("startedAt")),
            stopped_at=_iso(job.get("stoppedAt")),
            exit_code=exit_code if isinstance(exit_code, int) else None,
            container_reason=container.get("reason"),
            container_instance_arn=placed if isinstance(placed, str) and placed else None,
            runtime_seconds=billed_seconds(job),
            attempts=[BatchAttempt.from_batch(a) for a in job.get("attempts") or [] if isinstance(a, dict)],
            host_terminations=[r for r in reasons if r.startswith(HOST_TERMINATED_PREFIX)],
            host_terminated=bool(reasons) and reasons[-1].startswith(HOST_TERMINATED_PREFIX),
            log_stream=container.get("logStreamName") or last_attempt.get("logStreamName") or None,
            preflight=runs_preflight(container),
            smoke=runs_smoke(container),
        )


class ComputeEnvironmentState(DomainModel):
    """One compute environment as `DescribeComputeEnvironments` shows it."""

    name: str
    arn: str = ""
    status: str | None = None
    status_reason: str | None = None
    state: str | None = None
    max_vcpus: int | None = None
    instance_types: list[str] = Field(default_factory=list)
    ecs_cluster_arn: str | None = None
    spot: bool = False
    tags: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def from_batch(cls, environment: dict[str, Any]) -> ComputeEnvironmentState:
        resources = environment.get("computeResources") or {}
        return cls(
            name=str(environment.get("computeEnvironmentName") or ""),
            arn=str(environment.get("computeEnvironmentArn") or ""),
            status=environment.get("status"),
            status_reason=environment.get("statusReason"),
            state=environment.get("state"),
            max_vcpus=resources.get("maxvCpus"),
            instance_types=list(resources.get("instanceTypes") or []),
            ecs_cluster_arn=environment.get("ecsClusterArn") or None,
            spot=resources.get("type") in ("SPOT", "FARGATE_SPOT"),
            tags={str(k): str(v) for k, v in (environment.get("tags") or {}).items()},
        )


class JobQueueState(DomainModel):
    """One job queue as `DescribeJobQueues` shows it: `state` is ENABLED or DISABLED (whether it takes new
    jobs), `status` is Batch's progress on it (CREATING, UPDATING, VALID, INVALID, ...)."""

    name: str
    arn: str = ""
    state: str | None = None
    status: str | None = None
    status_reason: str | None = None

    @property
    def disabled(self) -> bool:
        return self.state == "DISABLED"

    @classmethod
    def from_batch(cls, queue: dict[str, Any]) -> JobQueueState:
        return cls(
            name=str(queue.get("jobQueueName") or ""),
            arn=str(queue.get("jobQueueArn") or ""),
            state=queue.get("state"),
            status=queue.get("status"),
            status_reason=queue.get("statusReason"),
        )


# Both carry the job as DescribeJobs shows it; a queue-blocked event is Batch's reason for a RUNNABLE job
# (the same statusReason DescribeJobs gives), which AWS sends without a state change.
JOB_EVENT_TYPES = ("Batch Job State Change", "Batch Job Queue Blocked")


class BatchJobEvent(DomainModel):
    """A `Batch Job State Change` (or `Batch Job Queue Blocked`) event: when EventBridge saw it, and the job
    as it was then."""

    at: str
    job: BatchJobState
    queue_blocked: bool = Field(default=False, description="Batch's verdict on the job heading its queue")

    @classmethod
    def from_eventbridge(cls, event: dict[str, Any]) -> BatchJobEvent | None:
        """The event as data, or None when it is not a well-formed Batch job event."""
        detail = event.get("detail")
        if event.get("detail-type") not in JOB_EVENT_TYPES or not isinstance(detail, dict):
            return None
        if not isinstance(detail.get("jobName"), str) or not isinstance(detail.get("status"), str):
            return None
        at = normalize_iso(event["time"]) if isinstance(event.get("time"), str) else now_iso()
        blocked = event["detail-type"] == JOB_EVENT_TYPES[1]
        return cls(at=at, job=BatchJobState.from_batch(detail), queue_blocked=blocked)
