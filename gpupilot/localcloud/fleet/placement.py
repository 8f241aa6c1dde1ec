"""Placement and jobs: a RUNNABLE job placed on a registered instance with room, never a DRAINING one (or told
why not, in Batch's words), started, run (or failed by a bad host), ended, retried as its retryStrategy says,
and its room freed."""

from __future__ import annotations

import contextlib
from datetime import datetime, timedelta
from typing import Any

from functions.shared.domain.jobs.definitions import retry_action
from gpupilot.localcloud.fleet.instances import FleetInstances
from gpupilot.localcloud.fleet.records import (
    ESSENTIAL_CONTAINER_EXITED,
    INSUFFICIENT_CAPACITY,
    INVALID_ENVIRONMENT,
    JOB_RESOURCE_REQUIREMENT,
    KERNEL_LINES,
    MAX_RESOURCE,
    NVML_DRIVER_NOT_LOADED,
    SMOKE_CUDA_ERROR,
    TASK_FAILED_TO_START,
    SimInstance,
    SimJob,
)
from gpupilot.localcloud.moto_adaptations.batch_consumables import needs_of
from gpupilot.localcloud.moto_adaptations.batch_shares import share_of_job


class FleetPlacement(FleetInstances):
    """Batch's scheduler: each job from RUNNABLE to its end."""

    def _advance_job(self, sim: SimJob, now: float) -> None:
        job = sim.job
        if job.stop and job.status not in ("SUCCEEDED", "FAILED"):
            return self._finish(sim, "FAILED", None, now, reason=job.job_stopped_reason)
        if job.status in ("SUBMITTED", "PENDING") and now >= sim.ready_at:
            self._set(job, "RUNNABLE")
        if job.status == "RUNNABLE" and share_of_job(job) is None:
            self._schedule(sim, now)  # a fair-share queue's job waits for its share's turn (fleet/shares.py)
        elif job.status == "STARTING" and sim.instance is not None and sim.instance.symptom == "no_gpu_visible":
            # The NVIDIA runtime's hook fails before the container starts: the host cannot give it its GPU.
            self._bad_host_fails(sim, now, None, NVML_DRIVER_NOT_LOADED, TASK_FAILED_TO_START)
        elif job.status == "STARTING":
            self._name_log_stream(sim)
            self._set(job, "RUNNING")
        elif job.status == "RUNNING" and sim.instance is not None and sim.instance.symptom == "cuda_error":
            if now >= min(sim.ends_at, sim.started + self.timeline.cuda_error_after):
                self._bad_host_fails(sim, now, SMOKE_CUDA_ERROR, None, ESSENTIAL_CONTAINER_EXITED)
        elif job.status == "RUNNING" and self.agents is not None and sim.instance is not None:
            # The host agent's side: the program runs what its checkpoint left it, and waits after its signal.
            left = self.agents.program_left(sim)
            if left is not None and left <= 0:
                self._finish_run(sim, now)
        elif job.status == "RUNNING" and now >= sim.ends_at:
            self._finish_run(sim, now)

    def _finish_run(self, sim: SimJob, now: float) -> None:
        """The program ended with the world's exit code."""
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
        needs = needs_of(sim.job.job_definition)
        if needs and not self.consumables.has_room(self.world.region, needs):
            return  # its consumable resources (its team's GPUs) are held by the team's running jobs: nothing launches
        fleet = self._instances.setdefault(environment.arn, [])
        placed = next((i for i in fleet if self._takes_jobs(i, now) and i.fits(sim.needs)), None)
        if placed is not None:
            if needs and not self.consumables.take(self.world.region, needs):
                return
            sim.consumed = needs
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
        job.job_started_at = self.clock.local_now()
        job.log_stream_name = None  # each Batch attempt gets a stream of its own when it reaches RUNNING
        job._start_attempt()
        job.latest_attempt["container"]["containerInstanceArn"] = instance.container_instance_arn
        if self.agents is not None:
            self.agents.host(instance).place(sim)
        self._set(job, "STARTING")

    def _count_tasks(self, instance: SimInstance) -> None:
        """ECS's runningTasksCount of the container instance: the jobs placed on it."""
        with contextlib.suppress(KeyError):
            self._container_instance(instance).running_tasks_count = len(instance.jobs)

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
        job.job_stopped_at = self._stopped_at(sim, exit_code, now)
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
        if sim.consumed:
            self.consumables.give_back(self.world.region, sim.consumed)
            sim.consumed = []
        instance = sim.instance
        if instance is None:
            return
        for kind, value in sim.needs.items():
            instance.used[kind] -= value
        instance.jobs.discard(sim.job.job_id)
        if self.agents is not None and instance.instance_id in self.agents.hosts:
            self.agents.hosts[instance.instance_id][0].leave(sim)
        self._count_tasks(instance)
        if not instance.jobs:
            instance.idle_since = now
        sim.instance = None

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
        job.job_stopped_at = self._stopped_at(sim, exit_code, now)
        job._stop_attempt()
        self._describe_attempt(job, exit_code, reason, status_reason)
        job.job_stopped_reason = status_reason
        self._set(job, "RUNNABLE")

    def _bad_host_fails(
        self, sim: SimJob, now: float, exit_code: int | None, reason: str | None, status_reason: str
    ) -> None:
        """A bad host fails the attempt: its kernel says why (once), and a container it could not start holds it."""
        instance = sim.instance
        assert instance is not None and instance.symptom is not None
        line = KERNEL_LINES[instance.symptom].format(pid=4000 + len(instance.console))
        if not any(line.split(",")[0] in printed for printed in instance.console):
            instance.print(line)
        # A job a bad host failed holds it a while (the world's hold_seconds): a bad host fails a job every few seconds,
        # not every tick (the published incident: 554 jobs in under two hours, one every 13 s).
        bad = self.world.instance(instance.instance_type).bad_hosts
        assert bad is not None  # a host has a symptom only by its type's bad_hosts
        instance.held_until = now + bad.hold_seconds
        self._attempt_ended(sim, now, exit_code, reason, status_reason)

    def _stopped_at(self, sim: SimJob, exit_code: int | None, now: float) -> datetime:
        """When an attempt stopped in simulated time: one that exited, its runtime after its start; one stopped
        (its host reclaimed, the job cancelled), the simulated seconds it ran until now; one never started, now."""
        if not sim.runs:
            return self.clock.local_now()
        ran = sim.simulated_seconds if exit_code is not None else max(0.0, now - sim.started) * self._speedup
        return sim.job.job_started_at + timedelta(seconds=ran)

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


def _fits(shape: dict[str, int], needs: dict[str, int]) -> bool:
    return all(needs[k] <= shape[k] for k in needs)
