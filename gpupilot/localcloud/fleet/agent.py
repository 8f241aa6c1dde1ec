"""The host agent on the simulated fleet: every instance runs the agent's own decisions (host_agent.core.Agent) over
its boto3 port (S3, EventBridge and CloudWatch of the embedded AWS), with a host that the world shapes.

What the agent sees: the instance metadata's spot interruption notice 120 simulated seconds before the world reclaims
the instance (`spot.<type>.interrupt_after_seconds`), the host's containers (each GPU Pilot job's variables, its GPUs,
its checkpoint directory's bind mount in a folder of the local cloud's) and its GPUs' utilisation
(`jobs.gpu_utilization`). What the job's program does: held until the agent has prepared its checkpoint directory (the
wrapper's wait), it runs what is left of `jobs.runtime_seconds` after the checkpoint it was given, writes its progress
every `jobs.checkpoint_every_seconds` and when signalled, and after the signal waits for the reclaim (the wrapper keeps
the container up). The agent's reports reach the home region's bus as EventBridge delivers them.

Time is the simulator's: each host's clock is the epoch of its launch plus the simulated seconds since (the fleet's
clock times --speedup), so the agent's polls and the program's writes are in simulated seconds, as the world's keys.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from functions.shared.domain.requests.host_agent import NOTICE_SECONDS
from gpupilot.localcloud.fleet.records import SimInstance, SimJob, gpu_catalog
from gpupilot.localcloud.world import World
from host_agent import checkpoints as cp
from host_agent.boto_aws import BotoCloud
from host_agent.config import CHECKPOINT_DIR
from host_agent.core import Agent
from host_agent.model import Container, GpuSample, SpotNotice

PROGRESS = "progress.json"  # what the simulated program writes in its checkpoint directory
MEMORY_SHARE = 0.6  # of a GPU's memory, what a busy job's program holds
AGENT_ROLE_ACCOUNT = "123456789012"


class SimulatedProgram:
    """A job's program on its host, in the host's simulated seconds."""

    def __init__(self, sim: SimJob, root: str | None, runtime: float, every: float | None, began: float) -> None:
        self.sim, self.root, self.runtime, self.every, self.began = sim, root, runtime, every, began
        # When it ran: a checkpointing job's once the wrapper let it (its directory ready), another's at once.
        self.started: float | None = None if root is not None else began
        self.restored = 0.0  # the progress its checkpoint gave it
        self.last_write: float | None = None
        self.signalled = False

    def done(self, now: float) -> float:
        if self.started is None:
            return 0.0
        return min(self.runtime, self.restored + (now - self.started))

    def step(self, now: float) -> float | None:
        """Run what is due: start once the directory is ready, write every `every`; the simulated seconds it has
        left (None: held, or done writing after a signal)."""
        if self.signalled:
            return None
        if self.started is None:
            if self.root is not None and not cp.marked(self.root, cp.READY):
                return None
            self.started = now
            if self.root is not None:
                saved = os.path.join(self.root, PROGRESS)
                with contextlib.suppress(OSError, ValueError, KeyError), open(saved) as found:
                    self.restored = min(self.runtime, float(json.load(found)["done_seconds"]))
        if self.root is not None and self.every and now - (self.last_write or self.started) >= self.every:
            self.write(now)
        return self.runtime - self.done(now)

    def write(self, now: float) -> None:
        assert self.root is not None
        with open(os.path.join(self.root, PROGRESS), "w") as out:
            json.dump({"done_seconds": self.done(now)}, out)
        self.last_write = now

    def signal(self, now: float) -> None:
        """It saves and exits; the wrapper keeps the container up until the host goes."""
        if self.root is not None and self.started is not None:
            self.write(now)
        self.signalled = True
        if self.root is not None:
            cp.mark(self.root, cp.EXITED)


class SimulatedHost:
    """One instance as its agent sees it: instance metadata, Docker and nvidia-smi (host_agent.ports)."""

    def __init__(self, instance: SimInstance, world: World, speedup: float, root: str, launched_epoch: float) -> None:
        self.instance, self.world, self.speedup, self.root = instance, world, speedup, root
        self.launched_epoch, self.now_real = launched_epoch, instance.launched_at
        self.programs: dict[str, SimulatedProgram] = {}
        self.devices: dict[str, list[int]] = {}
        spot = world.spot.get(instance.instance_type)
        after = spot.interrupt_after_seconds if spot is not None and instance.spot else None
        self.reclaim_at = None if after is None else launched_epoch + after

    def clock(self) -> float:
        return self.launched_epoch + (self.now_real - self.instance.launched_at) * self.speedup

    # -- Metadata ---------------------------------------------------------------------------------------------------
    def instance_id(self) -> str:
        return self.instance.instance_id

    def instance_type(self) -> str:
        return self.instance.instance_type

    def region(self) -> str:
        return self.world.region

    def spot_notice(self) -> SpotNotice | None:
        if self.reclaim_at is None or self.clock() < self.reclaim_at - NOTICE_SECONDS:
            return None
        at = datetime.fromtimestamp(self.reclaim_at, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return SpotNotice("terminate", at)

    # -- Containers -------------------------------------------------------------------------------------------------
    def running(self) -> list[Container] | None:
        return [self._container(program.sim) for program in self.programs.values()]

    def signal(self, container_id: str, signal: str) -> bool:
        program = self.programs.get(container_id)
        if program is None:
            return False
        program.signal(self.clock())
        return True

    def _container(self, sim: SimJob) -> Container:
        job = sim.job
        properties = job.job_definition.container_properties or {}
        env = {e["name"]: e["value"] for e in properties.get("environment") or []}
        env |= {e["name"]: e["value"] for e in (job.container_overrides or {}).get("environment") or []}
        env |= {"AWS_BATCH_JOB_ID": job.job_id, "AWS_BATCH_JQ_NAME": job.job_queue.name}
        env["NVIDIA_VISIBLE_DEVICES"] = ",".join(str(i) for i in self.devices.get(container_id(sim), [])) or "void"
        program = self.programs[container_id(sim)]
        mounts = {env[CHECKPOINT_DIR]: program.root} if program.root is not None and env.get(CHECKPOINT_DIR) else {}
        began = self.began(sim)
        return Container(container_id(sim), env, mounts, created_at=began, pull_started_at=began)

    # -- Gpus -------------------------------------------------------------------------------------------------------
    def sample(self) -> list[GpuSample] | None:
        now, memory = self.clock(), self._gpu_memory_mib()
        held = {i: p for p in self.programs.values() for i in self.devices.get(container_id(p.sim), [])}
        samples = []
        for index in range(self.instance.gpus):
            program = held.get(index)
            if program is not None:
                program.step(now)  # a program the agent has just let start runs from now
            share = 0.0
            if program is not None and program.started is not None and not program.signalled:
                share = self.world.jobs.utilization_at(now - program.started)
            used = memory * MEMORY_SHARE if program is not None and program.started is not None else 0.0
            samples.append(GpuSample(f"GPU-{self.instance.instance_id}-{index}", index, share, used))
        return samples

    def _gpu_memory_mib(self) -> float:
        gpu = gpu_catalog().get(self.instance.instance_type)
        return float(gpu.gpu_memory_gib * 1024) if gpu is not None else 0.0

    # -- the fleet's side -------------------------------------------------------------------------------------------
    def place(self, sim: SimJob) -> None:
        """A job's container starts here: its GPUs, and its program (with its own checkpoint folder if it asks)."""
        taken = {i for devices in self.devices.values() for i in devices}
        free = [i for i in range(self.instance.gpus) if i not in taken]
        self.devices[container_id(sim)] = free[: sim.needs["GPU"]]
        env = {e["name"]: e["value"] for e in (sim.job.job_definition.container_properties or {}).get("environment")
               or []}  # fmt: skip
        root = None
        if env.get(CHECKPOINT_DIR):
            root = os.path.join(self.root, sim.job.job_id, str(sim.runs))
            os.makedirs(root, exist_ok=True)
        every = self.world.jobs.checkpoint_every_seconds
        self.programs[container_id(sim)] = SimulatedProgram(sim, root, sim.simulated_seconds, every, self.began(sim))

    def began(self, sim: SimJob) -> float:
        """When the job's container started, on this host's clock."""
        return self.launched_epoch + (sim.started - self.instance.launched_at) * self.speedup

    def leave(self, sim: SimJob) -> None:
        self.programs.pop(container_id(sim), None)
        self.devices.pop(container_id(sim), None)


def container_id(sim: SimJob) -> str:
    return f"{sim.job.job_id}-{sim.runs}"


class ReportingCloud(BotoCloud):
    """The agent's boto3 port on the embedded AWS; what it puts on the bus is also delivered to the rules' targets,
    as EventBridge does (the embedded EventBridge matches no Lambda targets: the local cloud delivers them)."""

    def __init__(
        self,
        client: Callable[[str, str], Any],
        deliver: Callable[[dict[str, Any]], None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(client)
        self._deliver, self._clock = deliver, clock

    def put_events(self, region: str, entries: list[dict[str, Any]]) -> None:
        super().put_events(region, entries)
        at = datetime.fromtimestamp(self._clock(), tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        for entry in entries:
            self._deliver({
                "version": "0", "id": str(uuid.uuid4()), "source": entry["Source"], "detail-type": entry["DetailType"],
                "account": AGENT_ROLE_ACCOUNT, "region": region, "resources": list(entry.get("Resources") or []),
                "time": at, "detail": json.loads(entry["Detail"]),
            })  # fmt: skip


class HostAgents:
    """Every instance's agent, stepped with the fleet."""

    def __init__(
        self, world: World, speedup: float, root: str, cloud: ReportingCloud, clock: Callable[[], float] = time.time
    ) -> None:
        """`clock`: the local cloud's epoch seconds (an instance launches at its time)."""
        self.world, self.speedup, self.root, self.cloud, self._clock = world, speedup, root, cloud, clock
        self.hosts: dict[str, tuple[SimulatedHost, Agent]] = {}

    def host(self, instance: SimInstance) -> SimulatedHost:
        found = self.hosts.get(instance.instance_id)
        if found is None:
            launched = self._clock()
            host_root = os.path.join(self.root, instance.instance_id)
            host = SimulatedHost(instance, self.world, self.speedup, host_root, launched)
            found = self.hosts[instance.instance_id] = (host, Agent(host, host, host, self.cloud, host.clock,
                                                                     owned_root=host_root))  # fmt: skip
        return found[0]

    def step(self, now: float) -> None:
        """Each live host's agent does what is due, then each program; a gone host's agent goes with it."""
        for instance_id, (host, agent) in list(self.hosts.items()):
            if host.instance.terminated:
                del self.hosts[instance_id]
                continue
            host.now_real = now
            agent.step()

    def program_left(self, sim: SimJob) -> float | None:
        """The simulated seconds the job's program has left (None: held, or waiting for the reclaim after its
        signal); once none is left, the attempt's simulated length becomes its time on the host."""
        found = self.hosts.get(sim.instance.instance_id) if sim.instance is not None else None
        host = found[0] if found is not None else None
        program = host.programs.get(container_id(sim)) if host is not None else None
        if host is None or program is None:
            return None
        left = program.step(host.clock())
        if left is not None and left <= 0:
            # Its wait for the restore, then what its checkpoint left it to run (Batch's startedAt to stoppedAt).
            assert program.started is not None
            sim.simulated_seconds = program.started - program.began + program.runtime - program.restored
        return left
