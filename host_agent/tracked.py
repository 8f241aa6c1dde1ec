"""One GPU Pilot job the agent tracks on its host: what it knows of it, and its checkpoint directory, restored before
the program starts, watched for what the program writes, and uploaded (core.py decides when)."""

from __future__ import annotations

import json
import logging
import os
from typing import TYPE_CHECKING, Any, Callable

from host_agent import checkpoints as cp
from host_agent.config import JobConfig
from host_agent.model import Container, GpuSample
from host_agent.report import iso
from host_agent.utilization import Utilization

if TYPE_CHECKING:
    from host_agent.ports import Cloud

log = logging.getLogger("gpupilot-agent")


class Tracked:
    """One GPU Pilot job's container on this host, and what the agent did for it."""

    def __init__(self, container: Container, config: JobConfig, root: str | None, now: float) -> None:
        self.container, self.config, self.root, self.began = container, config, root, now
        self.utilization = Utilization()
        self.last_sample: float | None = None
        self.pull_seconds: float | None = None
        self.resumed_from: dict[str, Any] | None = None
        self.manifest: dict[str, Any] | None = None
        self.fingerprint: Any = None
        self.uploaded: Any = None
        self.saved_at: float | None = None
        self.uploaded_at: float | None = None
        self.notice_at: float | None = None
        self.deadline: float | None = None  # after a notice: when its grace ends
        self.flushed = False
        self.idle_reported: float | None = None


def prepare(tracked: Tracked, root: str, cloud: Cloud, health: dict[str, Any], now: float) -> None:
    """A new job's checkpoint directory made ready: restored from its last upload, unless this host prepared it
    already (before the agent restarted: the program may be writing there)."""
    config = tracked.config
    assert config.checkpoint is not None
    if cp.marked(root, cp.READY):  # prepared before this agent (re)started: the program may be writing there
        tracked.resumed_from = read_marker(root, cp.RESUMED)
    else:
        cp.mark(root, cp.RESTORING)
        manifest = None
        try:
            manifest = cp.restore(cloud, config.home_region, config.checkpoint.bucket, config.job_id, root)
        except Exception as error:
            health["last_error"] = f"{iso(now)} job {config.job_id}: restore failed: {error}"
            log.exception("job %s: its checkpoint was not restored: the program starts without it", config.job_id)
        if manifest is not None:
            tracked.manifest = manifest
            tracked.resumed_from = {"attempt": manifest.get("attempt"), "saved_at": manifest.get("saved_at"),
                                    "checkpoint_uploaded_at": manifest.get("uploaded_at")}  # fmt: skip
            cp.mark(root, cp.RESUMED, json.dumps(tracked.resumed_from))
        cp.unmark(root, cp.RESTORING)
        cp.mark(root, cp.READY)
    tracked.fingerprint = tracked.uploaded = tuple(cp.files(root))
    if cp.marked(root, cp.INTERRUPTED):  # told of a notice before a restart: flushed again
        tracked.notice_at, tracked.deadline = now, now + config.checkpoint.grace_seconds


def look(tracked: Tracked, now: float) -> None:
    """When the program last wrote: the time its directory's files were first seen changed."""
    fingerprint = tuple(cp.files(tracked.root or ""))
    if fingerprint != tracked.fingerprint:
        tracked.fingerprint, tracked.saved_at = fingerprint, now


def upload(
    tracked: Tracked,
    cloud: Cloud,
    clock: Callable[[], float],
    identity: Callable[[], tuple[str, str, str]],
    now: float,
    reason: str,
) -> None:
    """What the program wrote since the last upload (or the restore), uploaded with what it is and why."""
    config, root = tracked.config, tracked.root
    if root is None or config.checkpoint is None:
        return
    look(tracked, now)
    if tracked.fingerprint == tracked.uploaded:
        return  # nothing written since the last upload (or the restore)
    meta = {"job_id": config.job_id, "attempt": config.attempt, "batch_job_id": config.batch_job_id,
            "instance_id": identity()[0], "saved_at": iso(tracked.saved_at), "reason": reason}  # fmt: skip
    tracked.manifest = cp.upload(cloud, config.home_region, config.checkpoint.bucket, root, tracked.manifest,
                                 meta, str(int(now * 1000)), clock)  # fmt: skip
    tracked.uploaded, tracked.uploaded_at = tracked.fingerprint, now


def held(samples: list[GpuSample], devices: list[str] | None) -> list[GpuSample]:
    """The samples of the GPUs a job holds (ECS names them by UUID; an index is accepted too)."""
    if devices is None:
        return list(samples)
    return [s for s in samples if s.uuid in devices or str(s.index) in devices]


def read_marker(root: str, marker: str) -> dict[str, Any] | None:
    try:
        with open(os.path.join(root, cp.MARKERS, marker)) as found:
            value = json.load(found)
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None
