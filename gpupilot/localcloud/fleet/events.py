"""What the fleet tells: Batch's job state changes and queue-blocked events, and the lines the simulator
writes to a job's log stream."""

from __future__ import annotations

import uuid
from datetime import UTC
from typing import Any

from gpupilot.localcloud.fleet.records import (
    DEFAULT_LOG_GROUP,
    JOB_STATE_CHANGE,
    QUEUE_BLOCKED,
    SIMULATED,
    FleetState,
    SimInstance,
    SimJob,
)


class FleetEvents(FleetState):
    """Batch's events, a job's state and reason, and its log stream."""

    def _reason(self, sim: SimJob, reason: str) -> None:
        """Batch's reason for a RUNNABLE job that cannot start, as AWS gives it: of the job heading its queue alone
        (DescribeJobs and ListJobs show it, and a queue-blocked event says it; no state change event does). A job
        behind it has none until it heads the queue ("If AWS Batch detects that you have a RUNNABLE job at the head
        and blocking the queue [...] the same reason is also updated into the statusReason field": the Batch user
        guide, Jobs stuck in a RUNNABLE status)."""
        if not self._heads_queue(sim):
            return
        sim.job.job_stopped_reason = reason
        if sim.blocked_for != reason:
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
                "time": self.clock.now().astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
                "region": self.world.region,
                "resources": resources or [job.arn],
                "detail": job.describe(),
            }
        )

    def _emit_instance(self, instance: SimInstance, detail_type: str, detail: dict[str, Any]) -> None:
        """EC2's event about an instance (its spot interruption warning, a rebalance recommendation), on the region's
        bus in order with Batch's, shaped as the Amazon EC2 User Guide shows them."""
        region, instance_id = self.world.region, instance.instance_id
        self._events.put(
            {
                "version": "0",
                "id": str(uuid.uuid4()),
                "detail-type": detail_type,
                "source": "aws.ec2",
                "account": self._account_id,
                "time": self.clock.now().astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
                "region": region,
                "resources": [f"arn:aws:ec2:{region}:{self._account_id}:instance/{instance_id}"],
                "detail": {"instance-id": instance_id} | detail,
            }
        )

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
        at = int(self.clock.time() * 1000)
        events = [{"timestamp": at, "message": f"{SIMULATED} {line}"} for line in lines]
        logs.put_log_events(group, job.log_stream_name, events)


def _log_destination(job: Any) -> tuple[str, str | None]:
    """The log group and stream prefix the job's definition gives the awslogs driver (Batch's defaults otherwise)."""
    configuration = (job.job_definition.container_properties or {}).get("logConfiguration") or {}
    options = configuration.get("options") or {}
    return options.get("awslogs-group") or DEFAULT_LOG_GROUP, options.get("awslogs-stream-prefix")
