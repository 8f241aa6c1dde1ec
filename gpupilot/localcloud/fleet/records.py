"""The fleet's records and Batch's words: its timeline, instances, jobs and state, and the reasons and
events Batch gives."""

from __future__ import annotations

import functools
import queue
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from gpupilot.localcloud.clock import LocalClock
from gpupilot.localcloud.moto_adaptations.batch_consumables import ConsumableBook
from gpupilot.localcloud.reservations import HeldReservation, ReservationBook
from gpupilot.localcloud.world import World

if TYPE_CHECKING:
    from functions.shared.domain.capacity.catalog import GpuType


@functools.cache
def gpu_catalog() -> Mapping[str, GpuType]:
    """The bundled GPU catalog the simulated hosts are made from, read once: the fleet asks it at every placement (the
    catalog's JSON parsed anew each time was a thirtieth of a busy local cloud's CPU)."""
    from functions.shared.adapters.ec2 import load_snapshot

    return MappingProxyType(load_snapshot())


class Agents(Protocol):
    """The hosts' agents, as the fleet steps them (fleet.agent.HostAgents: named here by what it does, as the agents
    read the fleet's records)."""

    hosts: dict[str, Any]

    def host(self, instance: SimInstance) -> Any: ...

    def step(self, now: float) -> None: ...

    def program_left(self, sim: SimJob) -> float | None: ...


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


# A container the runtime could not start: Batch's attempt says "Task failed to start" and the container's reason
# is ECS's (spotify/luigi#2808, nextflow-io/nextflow#5657); Batch keeps 255 characters of it.
TASK_FAILED_TO_START = "Task failed to start"


NVML_DRIVER_NOT_LOADED = (
    "CannotStartContainerError: Error response from daemon: failed to create task for container: failed to create "
    "shim task: OCI runtime create failed: runc create failed: unable to start container process: error during "
    "container init: error running hook #0: error running hook: exit status 1, stdout: , stderr: "
    "nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown"
)[:255]


ESSENTIAL_CONTAINER_EXITED = "Essential container in task exited"


SMOKE_CUDA_ERROR = 14  # payloads/cuda_smoke.py: "any other CUDA error"


# What a bad host's kernel prints (the console: ec2 GetConsoleOutput).
KERNEL_LINES = {
    "no_gpu_visible": "NVRM: GPU 0000:00:1e.0: RmInitAdapter failed! (0x26:0x56:1474)",
    "cuda_error": "NVRM: Xid (PCI:0000:00:1e): 48, pid={pid}, name=python3, An uncorrectable double bit error "
    "(DBE) has been detected on GPU in the framebuffer at partition 0, subpartition 0.",
}


BOOT_LINES = (
    "Linux version 6.1.112-122.189.amzn2023.x86_64 (mockbuild@ip-10-0-54-232) (gcc (GCC) 11.4.1) #1 SMP",
    "Command line: BOOT_IMAGE=(hd0,gpt1)/boot/vmlinuz-6.1.112-122.189.amzn2023.x86_64 root=UUID=4a1b console=ttyS0",
    "nvidia: loading out-of-tree module taints kernel.",
    "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  560.35.03  Release Build",
    "cloud-init[2051]: Cloud-init v. 22.2.2 running 'modules:final'",
)


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
    # A job on a host whose GPU throws CUDA errors dies this soon after it starts.
    cuda_error_after: float = 0.3


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
    # The Capacity Reservation it runs in, if any.
    reservation: HeldReservation | None = None
    # The world's `bad_hosts`: what this host does wrong, if it is bad.
    symptom: str | None = None
    console: list[str] = field(default_factory=list)
    checked: bool = False  # the boot check has printed its verdict
    held_until: float = 0.0
    signalled: set[str] = field(default_factory=set)  # EC2's spot signals emitted for it (detail types)

    def print(self, line: str) -> None:
        """A line on the instance's console (kernel messages, cloud-init's output)."""
        self.console.append(f"[{len(self.console) * 1.37:12.6f}] {line}")

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
    started: float = 0.0
    ends_at: float = 0.0
    runs: int = 0
    simulated_seconds: float = 0.0  # how long the attempt runs in simulated time (Batch's startedAt to stoppedAt)
    # The reason a queue-blocked event was last sent for (one per reason, as the job heads its queue).
    blocked_for: str | None = None
    # The consumable resources' units it holds while it runs (Batch takes them at STARTING, gives them back at its end).
    consumed: list[tuple[str, int]] = field(default_factory=list)


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
    reservations: ReservationBook | None
    consumables: ConsumableBook
    timeline: Timeline
    clock: LocalClock
    events_delivered: int
    _deliver: EventSink
    _account_id: str
    _speedup: float
    _status_of: Callable[[str, list[str]], tuple[str, str]]
    _jobs: dict[str, SimJob]
    _instances: dict[str, list[SimInstance]]
    _launches: dict[str, int]
    _lock: threading.Lock
    _events: queue.Queue[dict[str, Any] | None]
    _stopping: threading.Event
    _threads: list[threading.Thread]
    agents: Agents | None

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
        gpu = gpu_catalog().get(instance_type)
        if gpu is None:
            return None
        return {"GPU": gpu.gpus, "VCPU": gpu.vcpus, "MEMORY": int(gpu.memory_gib * 1024)}
