"""AWS Batch as plain data: a job's state (from DescribeJobs or a state-change event) and a compute
environment's state, read once at the edge into our time convention. Pure."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from functions.shared.domain.clock import iso_from_millis, normalize_iso, now_iso
from functions.shared.domain.model import DomainModel


def _iso_time(value: Any) -> str | None:
    """An ISO time from a datetime (boto3 parses EC2 and ECS times) or ISO text."""
    if isinstance(value, datetime):
        return normalize_iso(value.isoformat())
    return normalize_iso(value) if isinstance(value, str) else None


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
    host_terminations: list[str] = Field(
        default_factory=list, description="Batch's words for each of its attempts whose host was terminated"
    )
    host_terminated: bool = Field(default=False, description="Its last attempt ended with its host's termination")
    log_stream: str | None = Field(default=None, description="Its last attempt's log stream, named at RUNNING")

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
            host_terminations=[r for r in reasons if r.startswith(HOST_TERMINATED_PREFIX)],
            host_terminated=bool(reasons) and reasons[-1].startswith(HOST_TERMINATED_PREFIX),
            log_stream=container.get("logStreamName") or last_attempt.get("logStreamName") or None,
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

    @classmethod
    def from_eventbridge(cls, event: dict[str, Any]) -> BatchJobEvent | None:
        """The event as data, or None when it is not a well-formed Batch job event."""
        detail = event.get("detail")
        if event.get("detail-type") not in JOB_EVENT_TYPES or not isinstance(detail, dict):
            return None
        if not isinstance(detail.get("jobName"), str) or not isinstance(detail.get("status"), str):
            return None
        at = normalize_iso(event["time"]) if isinstance(event.get("time"), str) else now_iso()
        return cls(at=at, job=BatchJobState.from_batch(detail))


class Ec2InstanceState(DomainModel):
    """One EC2 instance of a pool, as `DescribeInstances` shows it (found by the pool tag Batch propagates)."""

    instance_id: str
    instance_type: str = ""
    state: str = ""
    launched_at: str | None = None
    zone: str = ""
    spot: bool = False

    @classmethod
    def from_ec2(cls, instance: dict[str, Any]) -> Ec2InstanceState:
        launched = instance.get("LaunchTime")
        return cls(
            instance_id=str(instance.get("InstanceId") or ""),
            instance_type=str(instance.get("InstanceType") or ""),
            state=str((instance.get("State") or {}).get("Name") or ""),
            launched_at=_iso_time(launched),
            zone=str((instance.get("Placement") or {}).get("AvailabilityZone") or ""),
            spot=instance.get("InstanceLifecycle") == "spot",
        )

    @classmethod
    def from_container_instance(cls, container: ContainerInstanceState) -> Ec2InstanceState:
        """A registered instance as ECS shows it (its agent runs, so the instance does)."""
        return cls(
            instance_id=container.ec2_instance_id,
            instance_type=container.instance_type,
            state="running",
            launched_at=container.registered_at,
            zone=container.zone,
        )

    @property
    def alive(self) -> bool:
        return self.state in ("pending", "running")


class ContainerInstanceState(DomainModel):
    """One ECS container instance of a pool's cluster, as `DescribeContainerInstances` shows it."""

    arn: str
    ec2_instance_id: str = ""
    status: str = ""
    agent_connected: bool = False
    gpus: int = Field(default=0, description="GPUs registered with ECS (0: registered without GPU resources)")
    registered_at: str | None = None
    instance_type: str = Field(default="", description="ECS's ecs.instance-type attribute")
    zone: str = Field(default="", description="ECS's ecs.availability-zone attribute")

    @property
    def registered(self) -> bool:
        return self.status in ("ACTIVE", "DRAINING")

    @classmethod
    def from_ecs(cls, container_instance: dict[str, Any]) -> ContainerInstanceState:
        gpus = next(
            (len(r.get("stringSetValue") or []) for r in container_instance.get("registeredResources") or []
             if r.get("name") == "GPU"),
            0,
        )  # fmt: skip
        registered = container_instance.get("registeredAt")
        attributes = {a.get("name"): a.get("value") for a in container_instance.get("attributes") or []}
        return cls(
            instance_type=str(attributes.get("ecs.instance-type") or ""),
            zone=str(attributes.get("ecs.availability-zone") or ""),
            arn=str(container_instance.get("containerInstanceArn") or ""),
            ec2_instance_id=str(container_instance.get("ec2InstanceId") or ""),
            status=str(container_instance.get("status") or ""),
            agent_connected=bool(container_instance.get("agentConnected")),
            gpus=gpus,
            registered_at=_iso_time(registered),
        )


class FleetState(DomainModel):
    """A pool's instances and its cluster's container instances, read together."""

    instances: list[Ec2InstanceState] = Field(default_factory=list)
    container_instances: list[ContainerInstanceState] = Field(default_factory=list)
