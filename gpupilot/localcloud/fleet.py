"""A simulated GPU fleet behind the local cloud's AWS Batch, on moto's own EC2 and ECS.

Batch's scheduler as a GPU user meets it: a compute environment with RUNNABLE jobs launches EC2
instances of its types (bounded by maxvCpus, the world's capacity, per-zone offerings and vCPU quotas),
tagged with its `computeResources.tags` as Batch tags them; after a boot each instance's ECS agent
registers it as a container instance in the compute environment's cluster with its CPU, memory and GPUs,
unless the world says otherwise (`ecs_agent: never_registers | disconnects`, `gpu_registration: missing`).
Jobs are placed on container instances with room (never on a DRAINING one: ECS schedules no new task there),
go STARTING then RUNNING, end, and free their room; an attempt that ends is retried as its job definition's
retryStrategy says (evaluateOnExit, attempts); idle instances are terminated after an idle period; spot
instances may be reclaimed. The world's bad GPU hosts (`bad_hosts`) fail what is placed on them as a bad
host does: the NVIDIA runtime's NVML error at container start, or the CUDA smoke test's CUDA-error code, each
with the kernel's Xid on the instance's console; or they fail the launch template's boot check (the console
shows its verdict) and register without GPUs. A job that cannot be placed stays RUNNABLE with Batch's own
statusReason where Batch gives one, and none where Batch gives none (instances up but never registered).
Everything is visible through the ordinary APIs: EC2 instances (and their console output), ECS container
instances, Batch jobs and their attempts.
A compute environment whose launch template targets a Capacity Reservation launches only into it (while it
is active and has room, in its zone; with the capacity-block market type for a Capacity Block), whatever the
world's on-demand capacity; other on-demand launches use an open reservation of their type and zone with
room, as EC2 does; a Capacity Block's instances are taken back from 30 minutes before its end, as EC2 takes
them.

One scheduler thread ticks the fleet; events are delivered in order by one delivery thread. Durations are
the local timeline's (seconds, not production's minutes); `speedup` shortens job runtimes only, while
Batch's startedAt/stoppedAt keep the simulated duration.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from functions.shared.domain.fleet import vcpu_quota_code
from functions.shared.domain.job_definitions import retry_action
from gpupilot.localcloud.reservations import HeldReservation, ReservationBook
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
    # A job a bad host failed holds it a while (ECS stopping the task, the agent cleaning it up, Batch placing the
    # next): a bad host fails a job every few seconds, not every tick (the published incident: 554 jobs in under two
    # hours, one every 13 s).
    bad_host_hold: float = 10.0
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


def requirements_of(job: Any) -> dict[str, int]:
    """GPU, VCPU and MEMORY (MiB) the job's definition asks for."""
    properties = job.job_definition.container_properties or {}
    found = {r["type"]: int(float(r["value"])) for r in properties.get("resourceRequirements") or []}
    return {
        "GPU": found.get("GPU", 0),
        "VCPU": found.get("VCPU", int(properties.get("vcpus") or 1)),
        "MEMORY": found.get("MEMORY", int(properties.get("memory") or 512)),
    }


class FleetSimulator:
    """Batch's scheduler and the GPU fleet, ticking in one thread."""

    def __init__(
        self,
        world: World,
        deliver: EventSink,
        account_id: str,
        speedup: float = 1.0,
        timeline: Timeline | None = None,
        compute_environment_status: Callable[[str, list[str]], tuple[str, str]] | None = None,
        reservations: ReservationBook | None = None,
    ) -> None:
        self.world = world
        self.reservations = reservations
        self.timeline = timeline or Timeline()
        self._deliver = deliver
        self._account_id = account_id
        self._speedup = max(speedup, 1e-9)
        self._status_of = compute_environment_status or (lambda _arn, _types: ("VALID", ""))
        self._jobs: dict[str, SimJob] = {}
        self._instances: dict[str, list[SimInstance]] = {}
        self._launches: dict[str, int] = {}  # per instance type: which of the world's bad_hosts it is
        self._lock = threading.Lock()
        self._events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._stopping = threading.Event()
        self._threads = [
            threading.Thread(target=self._schedule_forever, name="gpupilot-fleet", daemon=True),
            threading.Thread(target=self._deliver_forever, name="gpupilot-batch-events", daemon=True),
        ]
        self.events_delivered = 0

    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> FleetSimulator:
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._events.put(None)

    def submit(self, job: Any) -> None:
        """A job moto accepted: it becomes RUNNABLE after Batch's short start delay."""
        with self._lock:
            self._jobs[job.job_id] = SimJob(job, requirements_of(job), time.monotonic() + self.timeline.start_delay)

    def instances(self) -> list[SimInstance]:
        with self._lock:
            return [i for fleet in self._instances.values() for i in fleet]

    def console(self, instance_id: str) -> str | None:
        """The console output of an instance the simulator launched (None: not one of its instances)."""
        with self._lock:
            found = [i for fleet in self._instances.values() for i in fleet if i.instance_id == instance_id]
            return "\n".join(found[0].console) + "\n" if found else None

    def _schedule_forever(self) -> None:
        while not self._stopping.wait(self.timeline.tick):
            try:
                self.tick(time.monotonic())
            except Exception:  # a tick that fails must not stop the fleet
                if self._stopping.is_set():
                    return
                raise

    def _deliver_forever(self) -> None:
        while True:
            event = self._events.get()
            if event is None or self._stopping.is_set():
                return
            self.events_delivered += 1
            with contextlib.suppress(Exception):
                self._deliver(event)

    # -- the scheduler -------------------------------------------------------------------------
    def tick(self, now: float) -> None:
        """One scheduling pass: instances boot and register, jobs move, idle instances go."""
        with self._lock:
            for fleet in self._instances.values():
                for instance in fleet:
                    self._advance_instance(instance, now)
            for sim in list(self._jobs.values()):
                self._advance_job(sim, now)
            for fleet in self._instances.values():
                for instance in fleet:
                    self._retire_if_idle(instance, now)

    def _advance_job(self, sim: SimJob, now: float) -> None:
        job = sim.job
        if job.stop and job.status not in ("SUCCEEDED", "FAILED"):
            return self._finish(sim, "FAILED", None, now, reason=job.job_stopped_reason)
        if job.status in ("SUBMITTED", "PENDING") and now >= sim.ready_at:
            self._set(job, "RUNNABLE")
        if job.status == "RUNNABLE":
            self._schedule(sim, now)
        elif job.status == "STARTING" and sim.instance is not None and sim.instance.symptom == "no_gpu_visible":
            # The NVIDIA runtime's hook fails before the container starts: the host cannot give it its GPU.
            self._bad_host_fails(sim, now, None, NVML_DRIVER_NOT_LOADED, TASK_FAILED_TO_START)
        elif job.status == "STARTING":
            self._name_log_stream(sim)
            self._set(job, "RUNNING")
        elif job.status == "RUNNING" and sim.instance is not None and sim.instance.symptom == "cuda_error":
            if now >= min(sim.ends_at, sim.started + self.timeline.cuda_error_after):
                self._bad_host_fails(sim, now, SMOKE_CUDA_ERROR, None, ESSENTIAL_CONTAINER_EXITED)
        elif job.status == "RUNNING" and now >= sim.ends_at:
            exit_code = self.world.jobs.exit_code
            if exit_code == 0:
                self._finish(sim, "SUCCEEDED", exit_code, now)
            else:
                self._attempt_ended(sim, now, exit_code, None, ESSENTIAL_CONTAINER_EXITED)

    def _schedule(self, sim: SimJob, now: float) -> None:
        environment = self._environment_of(sim.job)
        if environment is None:
            return
        resources = environment.compute_resources or {}
        types = list(resources.get("instanceTypes") or [])
        status, _ = self._status_of(environment.arn, types)
        if status == "INVALID":
            return self._reason(sim, INVALID_ENVIRONMENT)
        if status != "VALID":
            return
        if sim.needs["VCPU"] > int(resources.get("maxvCpus") or 0):
            return self._reason(sim, MAX_RESOURCE)
        shapes = {t: self._shape(t) for t in types}
        fitting = [t for t, shape in shapes.items() if shape and _fits(shape, sim.needs)]
        if not fitting:
            return self._reason(sim, JOB_RESOURCE_REQUIREMENT)
        fleet = self._instances.setdefault(environment.arn, [])
        placed = next((i for i in fleet if self._takes_jobs(i, now) and i.fits(sim.needs)), None)
        if placed is not None:
            return self._start(sim, placed, now)
        if any(not i.terminated and i.fits(sim.needs) for i in fleet):
            return  # Batch waits for the instances it launched (booting, or whose agent never registers)
        spot = resources.get("type") == "SPOT"
        if self._targeted_reservation(resources) is not None:
            # Reserved capacity is held for the account: the world's on-demand shortage does not touch it.
            return self._launch(environment, fitting, fleet, now)
        blocked = [t for t in fitting if self.world.capacity(t, spot) == "none"]
        if len(blocked) == len(fitting):
            return self._reason(sim, INSUFFICIENT_CAPACITY.format(", ".join(blocked)))
        self._launch(environment, [t for t in fitting if t not in blocked], fleet, now)

    def _launch(self, environment: Any, types: list[str], fleet: list[SimInstance], now: float) -> None:
        """Launch one instance of the first type that some subnet's zone offers, within maxvCpus and quota."""
        resources = environment.compute_resources
        spot = resources.get("type") == "SPOT"
        running_vcpus = sum(i.vcpus for i in fleet if not i.terminated)
        for instance_type in types:
            shape = self._shape(instance_type)
            zone_subnet = self._zone_subnet(resources.get("subnets") or [], instance_type)
            if shape is None or zone_subnet is None:
                continue
            if running_vcpus + shape["VCPU"] > int(resources.get("maxvCpus") or 0):
                return  # at maxvCpus: jobs wait for room (Batch gives no reason)
            if not self._within_quota(instance_type, spot, shape["VCPU"]):
                return  # the account's vCPU quota: no instance launches, and Batch gives no reason
            zone, subnet = zone_subnet
            into = self._reservation_for(resources, spot, instance_type, zone)
            if into is False:
                return  # its reservation cannot take it (not begun, full, over): EC2 refuses the launch
            instance = self._run_instance(environment, instance_type, zone, subnet, spot, shape, now)
            if isinstance(into, HeldReservation):
                self._into_reservation(instance, into, targeted=self._targeted_reservation(resources) is not None)
            fleet.append(instance)
            return

    def _targeted_reservation(self, resources: dict[str, Any]) -> str | None:
        """The Capacity Reservation the compute environment's launch template (the version it names) targets."""
        named = resources.get("launchTemplate") or {}
        if not named.get("launchTemplateName"):
            return None
        try:
            template = self._ec2().get_launch_template_by_name(named["launchTemplateName"])
            version = named.get("version") or "$Default"
            data = (
                template.latest_version()
                if version == "$Latest"
                else template.get_version(template.default_version_number if version == "$Default" else int(version))
            ).data
        except Exception:
            return None
        target = (data.get("CapacityReservationSpecification") or {}).get("CapacityReservationTarget") or {}
        return target.get("CapacityReservationId")

    def _reservation_for(self, resources: dict[str, Any], spot: bool, instance_type: str,
                         zone: str) -> HeldReservation | bool | None:  # fmt: skip
        """The reservation a launch runs in (None: none; False: it targets one that cannot take it now)."""
        if self.reservations is None or spot:
            return None
        targeted = self._targeted_reservation(resources)
        found = self.reservations.launch_into(targeted, instance_type, zone, self.world.region)
        return False if targeted is not None and found is None else found

    def _into_reservation(self, instance: SimInstance, reservation: HeldReservation, targeted: bool) -> None:
        """The instance runs in the reservation: EC2 shows it so (DescribeInstances), and counts it against it."""
        assert self.reservations is not None
        self.reservations.hold(reservation, instance.instance_id)
        instance.reservation = reservation
        ec2_instance = self._ec2().get_instance(instance.instance_id)
        ec2_instance.capacity_reservation_id = reservation.reservation_id
        ec2_instance.capacity_reservation_specification = (
            {"CapacityReservationTarget": {"CapacityReservationId": reservation.reservation_id}}
            if targeted
            else {"CapacityReservationPreference": "open"}
        )
        if reservation.capacity_block:
            ec2_instance.lifecycle = "capacity-block"

    def _takes_jobs(self, instance: SimInstance, now: float) -> bool:
        """Usable, not holding a failed task, and not DRAINING ("Amazon ECS prevents new tasks from being scheduled
        for placement on the container instance": UpdateContainerInstancesState)."""
        if instance.terminated or not instance.usable or now < instance.held_until:
            return False
        with contextlib.suppress(KeyError):
            return str(self._container_instance(instance).status) == "ACTIVE"
        return False

    def _start(self, sim: SimJob, instance: SimInstance, now: float) -> None:
        for kind, value in sim.needs.items():
            instance.used[kind] += value
        instance.jobs.add(sim.job.job_id)
        self._count_tasks(instance)
        sim.instance = instance
        sim.runs += 1
        sim.started = now
        sim.ends_at = now + self.world.jobs.runtime_seconds / self._speedup
        sim.simulated_seconds = self.world.jobs.runtime_seconds
        if instance.symptom == "cuda_error":
            sim.simulated_seconds = min(sim.simulated_seconds, self.timeline.cuda_error_after * self._speedup)
        job = sim.job
        job.job_stopped_reason = None
        job.job_started_at = datetime.now()
        job.log_stream_name = None  # each Batch attempt gets a stream of its own when it reaches RUNNING
        job._start_attempt()
        job.latest_attempt["container"]["containerInstanceArn"] = instance.container_instance_arn
        self._set(job, "STARTING")

    def _finish(
        self,
        sim: SimJob,
        status: str,
        exit_code: int | None,
        now: float,
        reason: str | None = None,
        container_reason: str | None = None,
    ) -> None:
        job = sim.job
        self._release(sim, now)
        job.exit_code = exit_code
        job.job_stopped_at = self._stopped_at(sim, exit_code)
        job.job_stopped = True
        if status == "FAILED":
            job.job_stopped_reason = reason or ESSENTIAL_CONTAINER_EXITED
        if exit_code is not None and job.log_stream_name:
            self._log(job, f"exit code {exit_code} (the world file's jobs.exit_code)")
        if sim.runs:
            job._stop_attempt()
            self._describe_attempt(job, exit_code, container_reason, job.job_stopped_reason)
        self._set(job, status)
        del self._jobs[job.job_id]

    def _release(self, sim: SimJob, now: float) -> None:
        instance = sim.instance
        if instance is None:
            return
        for kind, value in sim.needs.items():
            instance.used[kind] -= value
        instance.jobs.discard(sim.job.job_id)
        self._count_tasks(instance)
        if not instance.jobs:
            instance.idle_since = now
        sim.instance = None

    # -- logs --------------------------------------------------------------------------------------
    def _name_log_stream(self, sim: SimJob) -> None:
        """What Batch does at RUNNING: the attempt gets its log stream. No container runs here, so what the simulator
        does is written to that stream instead, each line marked as simulated."""
        job = sim.job
        group, prefix = _log_destination(job)
        task_id = uuid.uuid4().hex
        job.log_stream_name = f"{prefix or job.job_definition.name}/default/{task_id}"
        if job.latest_attempt is not None:
            job.latest_attempt["container"]["logStreamName"] = job.log_stream_name
        properties = job.job_definition.container_properties or {}
        command = job.container_overrides.get("command") or properties.get("command") or []
        instance = sim.instance
        self._log(
            job,
            f"image {properties.get('image', '?')}",
            "command " + " ".join(str(part) for part in command),
            f"on {instance.instance_type} ({instance.instance_id})" if instance else "on an unknown host",
            f"runs {self.world.jobs.runtime_seconds:g} s (the world file's jobs.runtime_seconds)",
            group=group,
        )

    def _log(self, job: Any, *lines: str, group: str | None = None) -> None:
        from moto.logs.models import logs_backends

        logs = logs_backends[self._account_id][self.world.region]
        group = group or _log_destination(job)[0]
        logs.ensure_log_group(group)
        logs.ensure_log_stream(group, job.log_stream_name)
        at = int(time.time() * 1000)
        events = [{"timestamp": at, "message": f"{SIMULATED} {line}"} for line in lines]
        logs.put_log_events(group, job.log_stream_name, events)

    # -- instances -----------------------------------------------------------------------------
    def _advance_instance(self, instance: SimInstance, now: float) -> None:
        if instance.terminated:
            return
        if self._terminated_elsewhere(instance):
            # Terminated through EC2 (the sweep's remediation, an operator): Batch sees the host go, fails
            # the attempts that ran there, and launches another instance for the jobs still RUNNABLE.
            self._reclaim(instance, now)
            return
        behaviour = self.world.instance(instance.instance_type)
        booted = now - instance.launched_at >= self.timeline.boot
        passed = instance.symptom != "boot_check_fails"
        if booted and not instance.checked:
            # The launch template's boot check, before the ECS agent starts: its verdict on the console, and a host
            # that fails it registers without GPUs (userdata.py).
            instance.checked = True
            instance.print(
                f"cloud-init[2051]: gpupilot-boot-check: PASS {instance.gpus} GPUs visible ({instance.instance_type})"
                if passed
                else f"cloud-init[2051]: gpupilot-boot-check: FAIL nvidia-smi did not answer within 60 s "
                f"({instance.instance_type})"
            )
        if instance.container_instance_arn is None and booted and behaviour.ecs_agent != "never_registers":
            self._register(instance, gpus=behaviour.gpu_registration != "missing" and passed)
            instance.disconnects = behaviour.ecs_agent == "disconnects"
        disconnects_at = instance.launched_at + self.timeline.boot + self.timeline.disconnect_after
        if behaviour.ecs_agent == "disconnects" and instance.connected and now >= disconnects_at:
            instance.connected = False
            self._container_instance(instance).agent_connected = False
        held = instance.reservation
        if held is not None and self.reservations is not None and self.reservations.now() >= held.reclaims_at():
            # EC2: "Thirty minutes before the reservation expires, we begin to terminate any instances that are
            # still running in the Capacity Block."
            self._reclaim(instance, now)
            return
        spot = self.world.spot.get(instance.instance_type)
        reclaim_after = spot.interrupt_after_seconds if spot is not None else None
        if instance.spot and reclaim_after is not None and now - instance.launched_at >= reclaim_after:
            self._reclaim(instance, now)

    def _reclaim(self, instance: SimInstance, now: float) -> None:
        """The host goes (a spot interruption, or terminated through EC2): its jobs' attempts fail the way Batch
        reports it, and are retried as their job definition's retryStrategy says."""
        self._terminate(instance)
        for job_id in list(instance.jobs):
            self._attempt_ended(self._jobs[job_id], now, None, None, HOST_TERMINATED.format(instance.instance_id))

    def _bad_host_fails(
        self, sim: SimJob, now: float, exit_code: int | None, reason: str | None, status_reason: str
    ) -> None:
        """A bad host fails the attempt: its kernel says why (once), and a container it could not start holds it."""
        instance = sim.instance
        assert instance is not None and instance.symptom is not None
        line = KERNEL_LINES[instance.symptom].format(pid=4000 + len(instance.console))
        if not any(line.split(",")[0] in printed for printed in instance.console):
            instance.print(line)
        instance.held_until = now + self.timeline.bad_host_hold
        self._attempt_ended(sim, now, exit_code, reason, status_reason)

    def _attempt_ended(
        self, sim: SimJob, now: float, exit_code: int | None, reason: str | None, status_reason: str
    ) -> None:
        """An attempt that did not succeed: Batch retries it as the job's retryStrategy says (evaluateOnExit, first
        entry that matches; no entry matching retries; `attempts` in all), else the job FAILED."""
        job = sim.job
        ran = sim.instance is not None
        self._release(sim, now)
        strategy = job.job_definition.retry_strategy or {}
        attempts = int(strategy.get("attempts") or 1)
        if not ran or sim.runs >= attempts or retry_action(strategy, exit_code, reason, status_reason) != "RETRY":
            return self._finish(sim, "FAILED", exit_code, now, reason=status_reason, container_reason=reason)
        job.job_stopped_at = self._stopped_at(sim, exit_code)
        job._stop_attempt()
        self._describe_attempt(job, exit_code, reason, status_reason)
        job.job_stopped_reason = status_reason
        self._set(job, "RUNNABLE")

    @staticmethod
    def _stopped_at(sim: SimJob, exit_code: int | None) -> datetime:
        """When an attempt that exited stopped in simulated time (its runtime after its start); else now."""
        if exit_code is None or not sim.runs:
            return datetime.now()
        return sim.job.job_started_at + timedelta(seconds=sim.simulated_seconds)

    @staticmethod
    def _describe_attempt(job: Any, exit_code: int | None, reason: str | None, status_reason: str | None) -> None:
        """The attempt as DescribeJobs shows it (AttemptDetail): its container's exit code and reason, its status."""
        attempt = job.latest_attempt
        if attempt is None:
            return
        if status_reason:
            attempt["statusReason"] = status_reason
        if exit_code is not None:
            attempt["container"]["exitCode"] = exit_code
        if reason:
            attempt["container"]["reason"] = reason

    def _count_tasks(self, instance: SimInstance) -> None:
        """ECS's runningTasksCount of the container instance: the jobs placed on it."""
        with contextlib.suppress(KeyError):
            self._container_instance(instance).running_tasks_count = len(instance.jobs)

    def _terminated_elsewhere(self, instance: SimInstance) -> bool:
        try:
            state = self._ec2().get_instance(instance.instance_id).state
        except Exception:
            return True  # moto no longer knows it: gone
        return state in ("shutting-down", "terminated", "stopping", "stopped")

    def _retire_if_idle(self, instance: SimInstance, now: float) -> None:
        if instance.terminated or instance.jobs or not instance.usable:
            return
        # A host still cleaning up a task it failed is not idle yet.
        if now - max(instance.idle_since, instance.held_until) >= self.timeline.idle:
            self._terminate(instance)

    # -- moto's EC2, ECS and Batch ---------------------------------------------------------------
    def _run_instance(
        self,
        environment: Any,
        instance_type: str,
        zone: str,
        subnet: str,
        spot: bool,
        shape: dict[str, int],
        now: float,
    ) -> SimInstance:
        tags = dict((environment.compute_resources or {}).get("tags") or {})
        tags |= {"aws:batch:compute-environment": environment.name}
        reservation = self._ec2().run_instances(
            image_id=AMI,
            count=1,
            user_data=None,
            security_group_names=[],
            instance_type=instance_type,
            subnet_id=subnet,
            tags={"instance": tags},
            is_instance_type_default=False,
        )
        ec2_instance = reservation.instances[0]
        if spot:
            ec2_instance.lifecycle = "spot"
        index = self._launches.get(instance_type, 0)
        self._launches[instance_type] = index + 1
        bad = self.world.instance(instance_type).bad_hosts
        instance = SimInstance(
            instance_id=ec2_instance.id,
            instance_type=instance_type,
            zone=zone,
            spot=spot,
            vcpus=shape["VCPU"],
            memory_mib=shape["MEMORY"],
            gpus=shape["GPU"],
            launched_at=now,
            idle_since=now,
            symptom=bad.symptom if bad is not None and bad.is_bad(index) else None,
        )
        for line in BOOT_LINES:
            instance.print(line)
        return instance

    def _register(self, instance: SimInstance, gpus: bool) -> None:
        """The ECS agent registers the instance, with its GPUs when ECS_ENABLE_GPU_SUPPORT took effect."""
        environment = next(e for e, fleet in self._instances.items() if instance in fleet)
        found = self._batch().get_compute_environment(environment)
        if found is None:
            return  # its compute environment was deleted meanwhile (and moto terminated its instances)
        cluster = found.ecs_arn
        registered = self._ecs().register_container_instance(cluster, instance.instance_id)
        resources = [
            _integer("CPU", instance.vcpus * 1024),
            _integer("MEMORY", instance.memory_mib),
        ]
        if gpus:
            gpu_ids = [f"GPU-{uuid.uuid4()}" for _ in range(instance.gpus)]
            resources.append({"name": "GPU", "type": "STRINGSET", "stringSetValue": gpu_ids})
        registered.registered_resources = resources
        registered.remaining_resources = [dict(r) for r in resources]
        instance.container_instance_arn = registered.container_instance_arn
        instance.connected = True
        instance.gpus_registered = gpus and instance.gpus > 0

    def _terminate(self, instance: SimInstance) -> None:
        instance.terminated = True
        if self.reservations is not None and instance.reservation is not None:
            self.reservations.release(instance.instance_id)
        self._ec2().terminate_instances([instance.instance_id])
        if instance.container_instance_arn is not None:
            with contextlib.suppress(Exception):
                self._container_instance(instance).status = "INACTIVE"

    def _container_instance(self, instance: SimInstance) -> Any:
        instance_id = (instance.container_instance_arn or "").rpartition("/")[2]
        for instances in self._ecs().container_instances.values():
            if instance_id in instances:
                return instances[instance_id]
        raise KeyError(instance.container_instance_arn)

    def _environment_of(self, job: Any) -> Any:
        environments = getattr(job.job_queue, "environments", []) or []
        return environments[0] if environments else None

    def _shape(self, instance_type: str) -> dict[str, int] | None:
        from functions.shared.adapters.ec2 import load_snapshot

        gpu = load_snapshot().get(instance_type)
        if gpu is None:
            return None
        return {"GPU": gpu.gpus, "VCPU": gpu.vcpus, "MEMORY": int(gpu.memory_gib * 1024)}

    def _zone_subnet(self, subnets: list[str], instance_type: str) -> tuple[str, str] | None:
        """The first of the compute environment's subnets whose zone offers the type, as (zone, subnet)."""
        offered = self.world.offered_zones(instance_type)
        ec2 = self._ec2()
        for subnet_id in subnets:
            zone = ec2.get_subnet(subnet_id).availability_zone
            if zone in offered:
                return zone, subnet_id
        return None

    def _within_quota(self, instance_type: str, spot: bool, vcpus: int) -> bool:
        code = vcpu_quota_code(instance_type, spot)
        limit = self.world.quotas.get(code) if code else None
        if limit is None:
            return True
        in_use = sum(
            i.vcpus
            for fleet in self._instances.values()
            for i in fleet
            if not i.terminated and vcpu_quota_code(i.instance_type, i.spot) == code
        )
        return in_use + vcpus <= limit

    def _reason(self, sim: SimJob, reason: str) -> None:
        """Batch's reason for a RUNNABLE job that cannot start: DescribeJobs and ListJobs show it at once; no state
        change event says it (the state did not change), a queue-blocked event does once the job heads its queue."""
        sim.job.job_stopped_reason = reason
        if sim.blocked_for != reason and self._heads_queue(sim):
            sim.blocked_for = reason
            self._emit(sim.job, QUEUE_BLOCKED, resources=[sim.job.arn, sim.job.job_queue.arn])

    def _heads_queue(self, sim: SimJob) -> bool:
        """Whether the job is the first RUNNABLE job of its queue (by submission: the queues are first in, first
        out)."""
        queue_arn = sim.job.job_queue.arn
        head = next((s for s in self._jobs.values() if s.job.status == "RUNNABLE" and s.job.job_queue.arn == queue_arn),
                    None)  # fmt: skip
        return head is sim

    def _set(self, job: Any, status: str) -> None:
        job.status = status
        self._emit(job)

    def _emit(self, job: Any, detail_type: str = JOB_STATE_CHANGE, resources: list[str] | None = None) -> None:
        self._events.put(
            {
                "version": "0",
                "id": str(uuid.uuid4()),
                "detail-type": detail_type,
                "source": "aws.batch",
                "account": self._account_id,
                "time": datetime.now().astimezone().isoformat(timespec="seconds").replace("+00:00", "Z"),
                "region": self.world.region,
                "resources": resources or [job.arn],
                "detail": job.describe(),
            }
        )

    def _ec2(self) -> Any:
        from moto.ec2.models import ec2_backends

        return ec2_backends[self._account_id][self.world.region]

    def _ecs(self) -> Any:
        from moto.ecs.models import ecs_backends

        return ecs_backends[self._account_id][self.world.region]

    def _batch(self) -> Any:
        from moto.batch.models import batch_backends

        return batch_backends[self._account_id][self.world.region]


def _log_destination(job: Any) -> tuple[str, str | None]:
    """The log group and stream prefix the job's definition gives the awslogs driver (Batch's defaults otherwise)."""
    configuration = (job.job_definition.container_properties or {}).get("logConfiguration") or {}
    options = configuration.get("options") or {}
    return options.get("awslogs-group") or DEFAULT_LOG_GROUP, options.get("awslogs-stream-prefix")


def _fits(shape: dict[str, int], needs: dict[str, int]) -> bool:
    return all(needs[k] <= shape[k] for k in needs)


def _integer(name: str, value: int) -> dict[str, Any]:
    return {"name": name, "type": "INTEGER", "integerValue": value, "doubleValue": 0.0, "longValue": 0}
