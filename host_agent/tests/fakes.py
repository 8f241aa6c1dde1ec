"""In-memory ports for the agent's decisions (core.Agent): a host whose containers, GPUs, metadata and clock the test
sets, and a cloud that keeps what the agent put."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from host_agent.model import Container, GpuSample, SpotNotice


@dataclass
class Clock:
    now: float = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Metadata:
    notice: SpotNotice | None = None

    def instance_id(self) -> str:
        return "i-0123456789abcdef0"

    def instance_type(self) -> str:
        return "g5.12xlarge"

    def region(self) -> str:
        return "us-east-1"

    def spot_notice(self) -> SpotNotice | None:
        return self.notice


@dataclass
class Containers:
    listed: list[Container] = field(default_factory=list)
    signals: list[tuple[str, str]] = field(default_factory=list)
    answers: bool = True

    def running(self) -> list[Container] | None:
        return list(self.listed) if self.answers else None

    def signal(self, container_id: str, signal: str) -> bool:
        self.signals.append((container_id, signal))
        return True


@dataclass
class Gpus:
    utilization: dict[str, float] = field(default_factory=dict)
    memory_mib: float = 2048.0
    answers: bool = True

    def sample(self) -> list[GpuSample] | None:
        if not self.answers:
            return None
        return [
            GpuSample(uuid, index, share, self.memory_mib)
            for index, (uuid, share) in enumerate(sorted(self.utilization.items()))
        ]


@dataclass
class Cloud:
    objects: dict[tuple[str, str], bytes] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    metrics: list[dict[str, Any]] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)

    def put_file(self, region: str, bucket: str, key: str, path: str) -> None:
        self.calls.append(f"put {key}")
        self.objects[(bucket, key)] = Path(path).read_bytes()

    def get_file(self, region: str, bucket: str, key: str, path: str) -> None:
        self.calls.append(f"get {key}")
        Path(path).write_bytes(self.objects[(bucket, key)])

    def put_bytes(self, region: str, bucket: str, key: str, body: bytes) -> None:
        self.calls.append(f"put {key}")
        self.objects[(bucket, key)] = body

    def get_bytes(self, region: str, bucket: str, key: str) -> bytes:
        self.calls.append(f"get {key}")
        return self.objects[(bucket, key)]

    def exists(self, region: str, bucket: str, key: str) -> bool:
        return (bucket, key) in self.objects

    def put_events(self, region: str, entries: list[dict[str, Any]]) -> None:
        self.events.extend(entries)

    def put_metrics(self, region: str, namespace: str, data: list[dict[str, Any]]) -> None:
        self.metrics.extend({"Namespace": namespace} | datum for datum in data)

    def reports(self) -> list[dict[str, Any]]:
        import json

        return [json.loads(e["Detail"]) for e in self.events]


def job_container(
    container_id: str,
    tmp: Path,
    job_id: str = "job1",
    attempt: int = 1,
    devices: str = "GPU-a",
    checkpoint: bool = True,
    **extra: str,
) -> Container:
    """A GPU Pilot job's container as Docker shows it: its environment and its checkpoint directory's bind mount."""
    env = {
        "GPUPILOT_JOB_ID": job_id,
        "GPUPILOT_ATTEMPT": str(attempt),
        "GPUPILOT_HOME_REGION": "us-east-1",
        "AWS_BATCH_JOB_ID": f"batch-{job_id}-{attempt}",
        "AWS_BATCH_JQ_NAME": "gpupilot-spot-g5",
        "NVIDIA_VISIBLE_DEVICES": devices,
    } | extra
    mounts = {}
    if checkpoint:
        env |= {"GPUPILOT_CHECKPOINT_DIR": "/gpupilot/checkpoint", "GPUPILOT_CHECKPOINT_BUCKET": "hosts-bucket"}
        host_dir = tmp / "checkpoints" / job_id / str(attempt)
        os.makedirs(host_dir, exist_ok=True)
        mounts["/gpupilot/checkpoint"] = str(host_dir)
    return Container(container_id, env, mounts, created_at=1_800_000_030.5, pull_started_at=1_800_000_000.0)
