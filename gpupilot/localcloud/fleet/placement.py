"""Placement and jobs: a RUNNABLE job placed on a registered instance with room (or told why not, in Batch's
words), started, run, ended, and its room freed."""

from __future__ import annotations

from datetime import datetime, timedelta

from gpupilot.localcloud.fleet.instances import FleetInstances
from gpupilot.localcloud.fleet.records import (
    INSUFFICIENT_CAPACITY,
    INVALID_ENVIRONMENT,
    JOB_RESOURCE_REQUIREMENT,
    MAX_RESOURCE,
    SimInstance,
    SimJob,
)


class FleetPlacement(FleetInstances):
    """Batch's scheduler: each job from RUNNABLE to its end."""

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


def _fits(shape: dict[str, int], needs: dict[str, int]) -> bool:
    return all(needs[k] <= shape[k] for k in needs)
