"""The fleet's records and Batch's words: its timeline, instances, jobs and state, and the reasons and
events Batch gives."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpupilot.localcloud.world import World

INSUFFICIENT_CAPACITY = (
    "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Service cannot fulfill the capacity requested for instance type [{}]"
)


JOB_RESOURCE_REQUIREMENT = (
    "MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT - The job resource requirement (vCPU/memory/GPU) is higher than "
    "that can be met by the CE(s) attached to the job queue."
)


MAX_RESOURCE = (
    "MISCONFIGURATION:COMPUTE_ENVIRONMENT_MAX_RESOURCE - CE(s) associated with the job queue cannot meet the CPU "
    "requirement of the job."
)


INVALID_ENVIRONMENT = "ACTION_REQUIRED - CE(s) associated with the job queue are invalid."


HOST_TERMINATED = "Host EC2 (instance {}) terminated."


JOB_STATE_CHANGE = "Batch Job State Change"


# Batch's event for the RUNNABLE job at the head of a queue that it says why it cannot start ("Job queue blocked
# events"); its detail is the job as DescribeJobs shows it, statusReason included.
QUEUE_BLOCKED = "Batch Job Queue Blocked"


AMI = "ami-03cf127a"


# Where Batch's awslogs driver writes a job's output unless its definition names a group ("Use the awslogs log
# driver", AWS Batch User Guide); a stream is `<awslogs-stream-prefix>/default/<ECS task id>` with a prefix.
DEFAULT_LOG_GROUP = "/aws/batch/job"


# Every line the simulator writes to a job's stream says it is the simulator's, never the program's output.
SIMULATED = "[gpupilot local cloud: simulated, no container ran]"


EventSink = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Timeline:
    """How long things take in the local cloud (production: minutes; here: seconds)."""

    tick: float = 0.05
    start_delay: float = 0.3
    boot: float = 0.4
    disconnect_after: float = 0.3
    idle: float = 5.0


@dataclass
class SimInstance:
    """An EC2 instance the simulated Batch launched for a compute environment."""

    instance_id: str
    instance_type: str
    zone: str
    spot: bool
    vcpus: int
    memory_mib: int
    gpus: int
    launched_at: float
    container_instance_arn: str | None = None
    connected: bool = False
    gpus_registered: bool = False
    used: dict[str, int] = field(default_factory=lambda: {"GPU": 0, "VCPU": 0, "MEMORY": 0})
    jobs: set[str] = field(default_factory=set)
    idle_since: float = 0.0
    terminated: bool = False
    # The world's `ecs_agent: disconnects`: its agent drops before Batch places anything on it.
    disconnects: bool = False

    @property
    def usable(self) -> bool:
        registered = self.container_instance_arn is not None and self.connected and self.gpus_registered
        return registered and not self.disconnects

    def fits(self, needs: dict[str, int]) -> bool:
        room = {"GPU": self.gpus, "VCPU": self.vcpus, "MEMORY": self.memory_mib}
        return all(self.used[k] + needs[k] <= room[k] for k in needs)


@dataclass
class SimJob:
    """A Batch job the simulator schedules."""

    job: Any
    needs: dict[str, int]
    ready_at: float
    instance: SimInstance | None = None
    ends_at: float = 0.0
    runs: int = 0
    # The reason a queue-blocked event was last sent for (one per reason, as the job heads its queue).
    blocked_for: str | None = None


def _glob(pattern: str, value: str) -> bool:
    """Batch's evaluateOnExit patterns: exact, or a prefix when they end with `*`."""
    return value.startswith(pattern[:-1]) if pattern.endswith("*") else value == pattern


def retried(job: Any, status_reason: str, runs: int, reason: str = "", exit_code: int | None = None) -> bool:
    """Whether Batch moves the job back to RUNNABLE after an attempt that ended so: its definition's retryStrategy
    (attempts, default 1; the first evaluateOnExit entry whose conditions all match decides, and none matching
    retries)."""
    strategy = job.job_definition.retry_strategy or {}
    if runs >= int(strategy.get("attempts") or 1):
        return False
    said = {
        "onStatusReason": status_reason,
        "onReason": reason,
        "onExitCode": "" if exit_code is None else str(exit_code),
    }
    for rule in strategy.get("evaluateOnExit") or []:
        if all(_glob(str(rule[key]), value) for key, value in said.items() if key in rule):
            return str(rule.get("action", "")).lower() == "retry"
    return True


def requirements_of(job: Any) -> dict[str, int]:
    """GPU, VCPU and MEMORY (MiB) the job's definition asks for."""
    properties = job.job_definition.container_properties or {}
    found = {r["type"]: int(float(r["value"])) for r in properties.get("resourceRequirements") or []}
    return {
        "GPU": found.get("GPU", 0),
        "VCPU": found.get("VCPU", int(properties.get("vcpus") or 1)),
        "MEMORY": found.get("MEMORY", int(properties.get("memory") or 512)),
    }


class FleetState:
    """What the fleet holds (set by FleetSimulator), and moto's backends it works through."""

    world: World
    timeline: Timeline
    events_delivered: int
    _deliver: EventSink
    _account_id: str
    _speedup: float
    _status_of: Callable[[str, list[str]], tuple[str, str]]
    _jobs: dict[str, SimJob]
    _instances: dict[str, list[SimInstance]]
    _lock: threading.Lock
    _events: queue.Queue[dict[str, Any] | None]
    _stopping: threading.Event
    _threads: list[threading.Thread]

    def _ec2(self) -> Any:
        from moto.ec2.models import ec2_backends

        return ec2_backends[self._account_id][self.world.region]

    def _ecs(self) -> Any:
        from moto.ecs.models import ecs_backends

        return ecs_backends[self._account_id][self.world.region]

    def _batch(self) -> Any:
        from moto.batch.models import batch_backends

        return batch_backends[self._account_id][self.world.region]

    def _environment_of(self, job: Any) -> Any:
        environments = getattr(job.job_queue, "environments", []) or []
        return environments[0] if environments else None

    def _shape(self, instance_type: str) -> dict[str, int] | None:
        from functions.shared.adapters.ec2 import load_snapshot

        gpu = load_snapshot().get(instance_type)
        if gpu is None:
            return None
        return {"GPU": gpu.gpus, "VCPU": gpu.vcpus, "MEMORY": int(gpu.memory_gib * 1024)}
