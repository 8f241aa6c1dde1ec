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
A job whose definition names consumable resources (a team's GPU cap) waits RUNNABLE, no instance launched for it,
until each has the units it needs; it takes them as it starts and gives them back at its end, across every queue of
the region, as Batch's resource-aware scheduling does. Other jobs, of the same queue too, are not held by it.
A compute environment whose launch template targets a Capacity Reservation launches only into it (while it
is active and has room, in its zone; with the capacity-block market type for a Capacity Block), whatever the
world's on-demand capacity; other on-demand launches use an open reservation of their type and zone with
room, as EC2 does; a Capacity Block's instances are taken back from 30 minutes before its end, as EC2 takes
them.

One scheduler thread ticks the fleet; events are delivered in order by one delivery thread. Durations are
the local timeline's (seconds, not production's minutes), on the local cloud's clock (gpupilot/localcloud/clock.py:
an advance of the clock passes them at once); `speedup` shortens job runtimes only, while Batch's
startedAt/stoppedAt keep the simulated duration.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any

from gpupilot.localcloud.clock import LocalClock
from gpupilot.localcloud.fleet.agent import HostAgents, ReportingCloud
from gpupilot.localcloud.fleet.hosts import FleetHosts
from gpupilot.localcloud.fleet.records import EventSink, SimInstance, SimJob, Timeline, requirements_of
from gpupilot.localcloud.moto_adaptations.batch_consumables import ConsumableBook
from gpupilot.localcloud.reservations import ReservationBook
from gpupilot.localcloud.world import World


class FleetSimulator(FleetHosts):
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
        clock: LocalClock | None = None,
        consumables: ConsumableBook | None = None,
        agents_root: str | None = None,
    ) -> None:
        """`agents_root`: every instance runs the host agent, its hosts' folders under it (None: no agent)."""
        self.world = world
        self.reservations = reservations
        self.consumables = consumables or ConsumableBook()
        self.timeline = timeline or Timeline()
        self.clock = clock or LocalClock()
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
        self.agents = None
        if agents_root is not None:
            self.agents = HostAgents(world, self._speedup, agents_root, self._agent_cloud(), self.clock.time)

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
            # Batch's createdAt is the local cloud's time, which the fleet's ages and the handlers' are measured on.
            job.job_created_at = self.clock.local_now()
            ready_at = self.clock.monotonic() + self.timeline.start_delay
            self._jobs[job.job_id] = SimJob(job, requirements_of(job), ready_at)

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
                self.tick(self.clock.monotonic())
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

    def _agent_cloud(self) -> ReportingCloud:
        """The agents' boto3 port on the embedded AWS (one client per service and region, used by the scheduler's
        thread only); their reports delivered in order with Batch's events."""
        import boto3

        clients: dict[tuple[str, str], Any] = {}

        def client(service: str, region: str) -> Any:
            if (service, region) not in clients:
                clients[service, region] = boto3.client(service, region_name=region)  # type: ignore[call-overload]
            return clients[service, region]

        return ReportingCloud(client, self._events.put, self.clock.time)

    # -- the scheduler -------------------------------------------------------------------------
    def tick(self, now: float) -> None:
        """One scheduling pass: instances boot and register, jobs move, idle instances go."""
        with self._lock:
            for fleet in self._instances.values():
                for instance in fleet:
                    self._advance_instance(instance, now)
            if self.agents is not None:
                self.agents.step(now)
            for sim in list(self._jobs.values()):
                self._advance_job(sim, now)
            self._start_by_share(now)
            for fleet in self._instances.values():
                for instance in fleet:
                    self._retire_if_idle(instance, now)
