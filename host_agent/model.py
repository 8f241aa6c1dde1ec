"""What the agent reads from its host, as plain data."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Container:
    """A running container, as Docker and the ECS agent describe it."""

    id: str
    env: dict[str, str]
    # Container path -> host path of each bind mount.
    mounts: dict[str, str] = field(default_factory=dict)
    # When Docker created it (after its image was pulled), and when the ECS agent first listed its task (the pull's
    # start, as near as the agent polled): epoch seconds.
    created_at: float | None = None
    pull_started_at: float | None = None


@dataclass(frozen=True)
class GpuSample:
    """One GPU at one moment: utilisation from 0 to 1, memory in use."""

    uuid: str
    index: int
    utilization: float
    memory_used_mib: float


@dataclass(frozen=True)
class SpotNotice:
    """EC2's spot interruption notice (instance metadata spot/instance-action): what it will do, and when."""

    action: str
    time: str
