"""A simulated GPU fleet behind the local cloud's AWS Batch, on moto's own EC2 and ECS.

Batch's scheduler as a GPU user meets it: a compute environment with RUNNABLE jobs launches EC2
instances of its types (bounded by maxvCpus, the world's capacity, per-zone offerings and vCPU quotas),
tagged with its `computeResources.tags` as Batch tags them; after a boot each instance's ECS agent
registers it as a container instance in the compute environment's cluster with its CPU, memory and GPUs,
unless the world says otherwise (`ecs_agent: never_registers | disconnects`, `gpu_registration: missing`).
Jobs are placed on container instances with room, go STARTING then RUNNING, end, and free their room;
idle instances are terminated after an idle period; spot instances may be reclaimed. A job that cannot be
placed stays RUNNABLE with Batch's own statusReason where Batch gives one, and none where Batch gives
none (instances up but never registered). Everything is visible through the ordinary APIs: EC2 instances,
ECS container instances, Batch jobs.

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
    ) -> None:
        self.world = world
        self.timeline = timeline or Timeline()
        self._deliver = deliver
        self._account_id = account_id
        self._speedup = max(speedup, 1e-9)
        self._status_of = compute_environment_status or (lambda _arn, _types: ("VALID", ""))
        self._jobs: dict[str, SimJob] = {}
        self._instances: dict[str, list[SimInstance]] = {}
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
        elif job.status == "STARTING":
            self._name_log_stream(sim)
            self._set(job, "RUNNING")
        elif job.status == "RUNNING" and now >= sim.ends_at:
            exit_code = self.world.jobs.exit_code
            self._finish(sim, "SUCCEEDED" if exit_code == 0 else "FAILED", exit_code, now)

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
        placed = next((i for i in fleet if not i.terminated and i.usable and i.fits(sim.needs)), None)
        if placed is not None:
            return self._start(sim, placed, now)
        if any(not i.terminated and i.fits(sim.needs) for i in fleet):
            return  # Batch waits for the instances it launched (booting, or whose agent never registers)
        spot = resources.get("type") == "SPOT"
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
            fleet.append(self._run_instance(environment, instance_type, zone, subnet, spot, shape, now))
            return

    def _start(self, sim: SimJob, instance: SimInstance, now: float) -> None:
        for kind, value in sim.needs.items():
            instance.used[kind] += value
        instance.jobs.add(sim.job.job_id)
        sim.instance = instance
        sim.runs += 1
        sim.ends_at = now + self.world.jobs.runtime_seconds / self._speedup
        job = sim.job
        job.job_stopped_reason = None
        job.job_started_at = datetime.now()
        job.log_stream_name = None  # each Batch attempt gets a stream of its own when it reaches RUNNING
        job._start_attempt()
        job.latest_attempt["container"]["containerInstanceArn"] = instance.container_instance_arn
        self._set(job, "STARTING")

    def _finish(self, sim: SimJob, status: str, exit_code: int | None, now: float, reason: str | None = None) -> None:
        job = sim.job
        started = job.job_started_at if sim.instance is not None else datetime.now()
        self._release(sim, now)
        job.exit_code = exit_code
        job.job_stopped_at = (
            started + timedelta(seconds=self.world.jobs.runtime_seconds) if exit_code is not None else datetime.now()
        )
        job.job_stopped = True
        if status == "FAILED":
            job.job_stopped_reason = reason or "Essential container in task exited"
        if exit_code is not None and job.log_stream_name:
            self._log(job, f"exit code {exit_code} (the world file's jobs.exit_code)")
        self._set(job, status)
        if sim.runs:
            job._stop_attempt()
        del self._jobs[job.job_id]

    def _release(self, sim: SimJob, now: float) -> None:
        instance = sim.instance
        if instance is None:
            return
        for kind, value in sim.needs.items():
            instance.used[kind] -= value
        instance.jobs.discard(sim.job.job_id)
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
        if instance.container_instance_arn is None and booted and behaviour.ecs_agent != "never_registers":
            self._register(instance, gpus=behaviour.gpu_registration != "missing")
            instance.disconnects = behaviour.ecs_agent == "disconnects"
        disconnects_at = instance.launched_at + self.timeline.boot + self.timeline.disconnect_after
        if behaviour.ecs_agent == "disconnects" and instance.connected and now >= disconnects_at:
            instance.connected = False
            self._container_instance(instance).agent_connected = False
        spot = self.world.spot.get(instance.instance_type)
        reclaim_after = spot.interrupt_after_seconds if spot is not None else None
        if instance.spot and reclaim_after is not None and now - instance.launched_at >= reclaim_after:
            self._reclaim(instance, now)

    def _reclaim(self, instance: SimInstance, now: float) -> None:
        """The host goes (a spot interruption, or terminated through EC2): its jobs' attempts fail the way Batch
        reports it, and are retried as their job definition's retryStrategy says."""
        self._terminate(instance)
        said = HOST_TERMINATED.format(instance.instance_id)
        for job_id in list(instance.jobs):
            sim = self._jobs[job_id]
            self._release(sim, now)
            job = sim.job
            job.job_stopped_at = datetime.now()
            job._stop_attempt()
            job.latest_attempt["statusReason"] = said
            if retried(job, said, sim.runs):
                job.job_stopped_reason = said
                self._set(job, "RUNNABLE")
            else:
                self._finish(sim, "FAILED", None, now, reason=said)

    def _terminated_elsewhere(self, instance: SimInstance) -> bool:
        try:
            state = self._ec2().get_instance(instance.instance_id).state
        except Exception:
            return True  # moto no longer knows it: gone
        return state in ("shutting-down", "terminated", "stopping", "stopped")

    def _retire_if_idle(self, instance: SimInstance, now: float) -> None:
        if instance.terminated or instance.jobs or not instance.usable:
            return
        if now - instance.idle_since >= self.timeline.idle:
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
        return SimInstance(
            instance_id=ec2_instance.id,
            instance_type=instance_type,
            zone=zone,
            spot=spot,
            vcpus=shape["VCPU"],
            memory_mib=shape["MEMORY"],
            gpus=shape["GPU"],
            launched_at=now,
            idle_since=now,
        )

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
