"""The agent's decisions, one step at a time, over its ports: what it restores, signals, uploads, samples and reports.

A step does what is due: every 2 s it looks at the host's containers (a new GPU Pilot job: its checkpoint directory
restored before its program may start; a job gone: its last report) and at what each checkpointing program wrote
(uploaded every `every_seconds` if asked); every 5 s it asks the instance metadata for a spot interruption notice
(then each checkpointing job's program is signalled, given its grace to write, and its directory uploaded); every 10 s
it samples the GPUs (a report when a job's GPUs have all idled past its idle_policy); every minute it puts each job's
utilisation in CloudWatch. The clock is the caller's: real seconds on a host, simulated ones in the local cloud.

What must survive a restart of the agent is on disk, in each directory's markers: a directory already prepared is
never restored again over a running program's work, and one told of a notice is flushed again.
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from host_agent import checkpoints as cp
from host_agent.config import JobConfig
from host_agent.model import SpotNotice
from host_agent.report import CHECKPOINT, ENDED, IDLE, NAMESPACE, NOTICE, STARTED, entry, iso, metric_data
from host_agent.tracked import Tracked, held, look, prepare, upload

if TYPE_CHECKING:
    from host_agent.ports import Cloud, Containers, Gpus, Metadata

log = logging.getLogger("gpupilot-agent")
METRICS_PER_CALL = 500  # CloudWatch takes 1000 metric data a call; a job's minute is two


@dataclass(frozen=True)
class Timing:
    """How often the agent looks, in seconds of its clock."""

    discover_seconds: float = 2.0
    notice_seconds: float = 5.0
    sample_seconds: float = 10.0
    metrics_seconds: float = 60.0


class Agent:
    def __init__(
        self, metadata: Metadata, containers: Containers, gpus: Gpus, cloud: Cloud, clock: Callable[[], float],
        timing: Timing | None = None, owned_root: str | None = None,
    ) -> None:  # fmt: skip
        """`owned_root`: the host folder job definitions mount checkpoint directories from; a gone job's directory there
        is removed, and nothing outside it."""
        self.metadata, self.containers, self.gpus, self.cloud, self.clock = metadata, containers, gpus, cloud, clock
        self.timing = timing or Timing()
        self.owned_root = owned_root
        self.tracked: dict[str, Tracked] = {}
        self.notice: SpotNotice | None = None
        self.sequence = 0
        self.health: dict[str, Any] = {}
        self._due: dict[str, float] = {}
        self._identity: tuple[str, str, str] | None = None

    def step(self) -> None:
        """Do what is due now."""
        now = self.clock()
        if self._is_due("discover", now, self.timing.discover_seconds):
            self._discover(now)
            for tracked in list(self.tracked.values()):
                self._guard(tracked, self._keep, now)
        if self._is_due("notice", now, self.timing.notice_seconds):
            self._watch_notice(now)
        if self._is_due("sample", now, self.timing.sample_seconds):
            self._sample(now)
        for tracked in list(self.tracked.values()):
            if tracked.deadline is not None and not tracked.flushed:
                self._guard(tracked, self._flush_when_written, now)
        if self._is_due("metrics", now, self.timing.metrics_seconds, first=now + self.timing.metrics_seconds):
            self._metrics(now)

    def _is_due(self, what: str, now: float, every: float, first: float | None = None) -> bool:
        if now < self._due.setdefault(what, now if first is None else first):
            return False
        self._due[what] = now + every
        return True

    def _guard(self, tracked: Tracked, action: Callable[[Tracked, float], None], now: float) -> None:
        """One job's trouble (its directory, S3, its report) is logged and never stops the others'."""
        try:
            action(tracked, now)
        except Exception as error:
            self.health["last_error"] = f"{iso(now)} job {tracked.config.job_id}: {error}"
            log.exception("job %s attempt %s", tracked.config.job_id, tracked.config.attempt)

    def identity(self) -> tuple[str, str, str]:
        """(instance id, instance type, region), asked once."""
        if self._identity is None:
            self._identity = (self.metadata.instance_id(), self.metadata.instance_type(), self.metadata.region())
            self.health["instance"] = " ".join(self._identity)
        return self._identity

    # -- containers -------------------------------------------------------------------------------------------------
    def _discover(self, now: float) -> None:
        running = self.containers.running()
        self.health["docker"] = "no answer" if running is None else f"{len(running)} containers running"
        if running is None:
            return
        current = set()
        for container in running:
            config = JobConfig.from_env(container.env, self.identity()[2])
            if config is None:
                continue
            current.add(container.id)
            if container.id not in self.tracked:
                root = container.mounts.get(config.checkpoint.directory) if config.checkpoint else None
                tracked = self.tracked[container.id] = Tracked(container, config, root, now)
                self._guard(tracked, self._begin, now)
        for gone in [c for c in self.tracked if c not in current]:
            self._guard(self.tracked.pop(gone), self._end, now)

    def _begin(self, tracked: Tracked, now: float) -> None:
        """A job's container appeared: its image pull's length, and, for a checkpointing job, its checkpoint restored
        (the wrapper holds the program until the directory is ready) and a report of it (what a job that does not
        checkpoint started with, its last report says)."""
        container = tracked.container
        if container.created_at is not None and container.pull_started_at is not None:
            tracked.pull_seconds = round(max(0.0, container.created_at - container.pull_started_at), 1)
        if tracked.config.checkpoint is not None and tracked.root is None:
            log.warning("job %s: no host directory at %s: nothing is restored or uploaded", tracked.config.job_id,
                        tracked.config.checkpoint.directory)  # fmt: skip
        if tracked.root is not None:
            prepare(tracked, tracked.root, self.cloud, self.health, now)
        if self.notice is not None and tracked.notice_at is None:
            self._interrupt(tracked, now)
        elif tracked.root is not None:
            self._report(tracked, STARTED, now)

    def _end(self, tracked: Tracked, now: float) -> None:
        """A job's container is gone: a notice's checkpoint not yet uploaded is, the last report, the directory
        removed."""
        if tracked.deadline is not None and not tracked.flushed:
            tracked.flushed = True
            self._upload(tracked, now, "interruption")
        self._report(tracked, ENDED, now)
        root, owned = tracked.root, self.owned_root
        if root and owned and os.path.abspath(root).startswith(os.path.abspath(owned) + os.sep):
            shutil.rmtree(root, ignore_errors=True)

    # -- checkpoints ------------------------------------------------------------------------------------------------
    def _keep(self, tracked: Tracked, now: float) -> None:
        """Note when the program last wrote (its checkpoint's time); upload every `every_seconds` if asked."""
        checkpoint = tracked.config.checkpoint
        if tracked.root is None or checkpoint is None:
            return
        look(tracked, now)
        since = tracked.uploaded_at if tracked.uploaded_at is not None else tracked.began
        every = checkpoint.every_seconds
        if every and tracked.deadline is None and now - since >= every:
            self._upload(tracked, now, "periodic")

    def _flush_when_written(self, tracked: Tracked, now: float) -> None:
        """After a notice: upload once the program has ended (its checkpoint written) or its grace is over."""
        if tracked.root is None or cp.marked(tracked.root, cp.EXITED) or now >= (tracked.deadline or now):
            tracked.flushed = True
            self._upload(tracked, now, "interruption")
            self._report(tracked, CHECKPOINT, now)

    def _upload(self, tracked: Tracked, now: float, reason: str) -> None:
        upload(tracked, self.cloud, self.clock, self.identity, now, reason)

    # -- the spot notice --------------------------------------------------------------------------------------------
    def _watch_notice(self, now: float) -> None:
        notice = self.metadata.spot_notice()
        if notice is not None and self.notice is None:
            self.notice = notice
            self.health["spot_notice"] = f"{notice.action} at {notice.time}"
            log.warning("spot interruption notice: %s at %s", notice.action, notice.time)
            for tracked in list(self.tracked.values()):
                self._guard(tracked, self._interrupt, now)

    def _interrupt(self, tracked: Tracked, now: float) -> None:
        """The host will be reclaimed: a checkpointing job's program is told (its signal) and given its grace."""
        tracked.notice_at = now
        checkpoint, root = tracked.config.checkpoint, tracked.root
        if checkpoint is not None and root is not None:
            cp.mark(root, cp.INTERRUPTED)
            if not self.containers.signal(tracked.container.id, checkpoint.signal):
                log.warning("job %s: Docker did not signal its program", tracked.config.job_id)
            tracked.deadline = now + checkpoint.grace_seconds
        self._report(tracked, NOTICE, now)

    # -- GPUs -------------------------------------------------------------------------------------------------------
    def _sample(self, now: float) -> None:
        samples = self.gpus.sample()
        self.health["nvidia_smi"] = "no answer" if samples is None else f"{len(samples)} GPUs at {iso(now)}"
        if samples is None:
            return
        for tracked in list(self.tracked.values()):
            last, tracked.last_sample = tracked.last_sample, now
            utilization = tracked.utilization
            utilization.add(held(samples, tracked.config.devices), now,
                            self.timing.sample_seconds if last is None else now - last)  # fmt: skip
            idle_after, since = tracked.config.idle_after_seconds, utilization.idle_since
            crossed = idle_after and since is not None and utilization.idle_for(now) >= idle_after
            if crossed and tracked.idle_reported != since:
                tracked.idle_reported = since
                self._guard(tracked, lambda t, at: self._report(t, IDLE, at), now)

    def _metrics(self, now: float) -> None:
        by_region: dict[str, list[dict[str, Any]]] = {}
        for tracked in self.tracked.values():
            statistics = tracked.utilization.drain_window()
            if statistics:
                data = metric_data(tracked.config.job_id, tracked.config.pool, statistics, now)
                by_region.setdefault(tracked.config.home_region, []).extend(data)
        for region, data in by_region.items():
            for start in range(0, len(data), METRICS_PER_CALL):
                try:
                    self.cloud.put_metrics(region, NAMESPACE, data[start : start + METRICS_PER_CALL])
                except Exception as error:
                    self.health["last_error"] = f"{iso(now)} CloudWatch: {error}"
                    log.exception("GPU utilisation metrics were not put")

    # -- reports ----------------------------------------------------------------------------------------------------
    def _report(self, tracked: Tracked, reason: str, now: float) -> None:
        """Tell the control plane everything the agent knows of the attempt (EventBridge, the home region's bus)."""
        self.sequence = max(self.sequence + 1, int(now * 1000))
        instance_id, instance_type, _ = self.identity()
        config, manifest = tracked.config, tracked.manifest if tracked.uploaded_at is not None else None
        utilization = tracked.utilization.summary()
        if utilization is not None:
            utilization["idle_since"] = iso(utilization["idle_since"])
        detail = {
            "job_id": config.job_id, "attempt": config.attempt, "batch_job_id": config.batch_job_id,
            "pool": config.pool, "instance_id": instance_id, "instance_type": instance_type, "reason": reason,
            "at": iso(now), "sequence": self.sequence, "image_pull_seconds": tracked.pull_seconds,
            "resumed_from": tracked.resumed_from, "interruption_notice_at": iso(tracked.notice_at),
            "reclaim_at": self.notice.time if self.notice is not None else None, "gpu_utilization": utilization,
            "checkpoint": manifest and {k: manifest.get(k) for k in ("uploaded_at", "saved_at", "reason")},
        }  # fmt: skip
        self.cloud.put_events(config.home_region, [entry(detail)])
        self.health["last_report"] = f"{iso(now)} {reason} job {config.job_id} attempt {config.attempt}"
