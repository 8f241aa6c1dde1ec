"""Simulated AWS Batch scheduling: moves submitted jobs through their states and emits Batch's events.

What a job does depends on the world: a GPU type without capacity keeps its jobs RUNNABLE with
Batch's own reason; otherwise the job starts, runs `jobs.runtime_seconds` and exits with
`jobs.exit_code`. Runtimes are simulated time: `speedup` divides the wall-clock sleep, while Batch's
startedAt/stoppedAt keep the simulated duration (a 10-hour job costs 10 hours, and waits 1 second).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from gpupilot.localcloud.world import World

INSUFFICIENT_CAPACITY = (
    "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Service cannot fulfill the capacity requested for instance type [{}]"
)
EventSink = Callable[[dict[str, Any]], None]


def job_instance_types(job: Any) -> list[str]:
    """Instance types the job's queue can launch (from its compute environments)."""
    types: list[str] = []
    for environment in getattr(job.job_queue, "environments", []) or []:
        types.extend((environment.compute_resources or {}).get("instanceTypes") or [])
    return types


class BatchSimulator:
    """One thread per job; every state change becomes a 'Batch Job State Change' event."""

    def __init__(
        self,
        world: World,
        deliver: EventSink,
        account_id: str,
        speedup: float = 1.0,
        start_delay_seconds: float = 0.3,
    ) -> None:
        self.world = world
        self._deliver = deliver
        self._account_id = account_id
        self._speedup = max(speedup, 1e-9)
        self._start_delay = start_delay_seconds
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self.events_delivered = 0

    def submit(self, job: Any) -> None:
        thread = threading.Thread(target=self._run, args=(job,), name=f"batch-sim-{job.job_id}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def stop(self) -> None:
        self._stopping.set()

    def _sleep(self, simulated_seconds: float, job: Any) -> bool:
        """Sleep the scaled time; False if the job was terminated or the cloud is stopping."""
        deadline = simulated_seconds / self._speedup
        step = 0.05
        waited = 0.0
        while waited < deadline:
            if job.stop or self._stopping.is_set():
                return False
            self._stopping.wait(min(step, deadline - waited))
            waited += step
        return not job.stop

    def _run(self, job: Any) -> None:
        try:
            self._simulate(job)
        except Exception:
            if not self._stopping.is_set():
                raise

    def _simulate(self, job: Any) -> None:
        if not self._sleep(self._start_delay, job):
            return self._terminated(job)
        self._set(job, "RUNNABLE")
        types = job_instance_types(job)
        blocked = [t for t in types if self.world.instance(t).capacity == "none"]
        if types and len(blocked) == len(types):
            # moto reports job_stopped_reason as statusReason, for RUNNABLE jobs too.
            job.job_stopped_reason = INSUFFICIENT_CAPACITY.format(", ".join(blocked))
            self._emit(job)
            while self._sleep(3600, job):
                pass
            return self._terminated(job)
        if not self._sleep(self._start_delay, job):
            return self._terminated(job)
        self._set(job, "STARTING")
        job.job_started_at = datetime.now()
        job._start_attempt()
        self._set(job, "RUNNING")
        runtime = self.world.jobs.runtime_seconds
        if not self._sleep(runtime, job):
            return self._terminated(job)
        job.exit_code = self.world.jobs.exit_code
        job.job_stopped_at = job.job_started_at + timedelta(seconds=runtime)
        job.job_stopped = True
        if job.exit_code == 0:
            self._set(job, "SUCCEEDED")
        else:
            job.job_stopped_reason = "Essential container in task exited"
            self._set(job, "FAILED")
        job._stop_attempt()

    def _terminated(self, job: Any) -> None:
        if self._stopping.is_set():
            return
        job.job_stopped = True
        job.job_stopped_at = datetime.now()
        self._set(job, "FAILED")

    def _set(self, job: Any, status: str) -> None:
        job.status = status
        self._emit(job)

    def _emit(self, job: Any) -> None:
        detail = job.describe()
        event = {
            "version": "0",
            "id": str(uuid.uuid4()),
            "detail-type": "Batch Job State Change",
            "source": "aws.batch",
            "account": self._account_id,
            "time": datetime.now().astimezone().isoformat(timespec="seconds").replace("+00:00", "Z"),
            "region": self.world.region,
            "resources": [job.arn],
            "detail": detail,
        }
        self.events_delivered += 1
        self._deliver(event)
