"""What the agent needs from its host and from AWS: the host's adapters (host.py, aws.py) implement these, the
tests' fakes too (host_agent/tests/fakes.py). Not shipped to hosts: annotations only."""

from __future__ import annotations

from typing import Any, Protocol

from host_agent.model import Container, GpuSample, SpotNotice


class Metadata(Protocol):
    """The instance metadata service."""

    def instance_id(self) -> str: ...

    def instance_type(self) -> str: ...

    def region(self) -> str: ...

    def spot_notice(self) -> SpotNotice | None:
        """The spot interruption notice, None while there is none."""
        ...


class Containers(Protocol):
    """The host's containers (Docker, the ECS agent)."""

    def running(self) -> list[Container] | None:
        """Every running container; None when Docker cannot be asked now (nothing is concluded from that)."""
        ...

    def signal(self, container_id: str, signal: str) -> bool:
        """Send `signal` (SIGTERM...) to the container's first process; False when Docker could not."""
        ...


class Gpus(Protocol):
    def sample(self) -> list[GpuSample] | None:
        """Each GPU now; None when the driver does not answer in time."""
        ...


class Cloud(Protocol):
    """S3, EventBridge and CloudWatch, with the instance role's credentials."""

    def put_file(self, region: str, bucket: str, key: str, path: str) -> None: ...

    def get_file(self, region: str, bucket: str, key: str, path: str) -> None: ...

    def put_bytes(self, region: str, bucket: str, key: str, body: bytes) -> None: ...

    def get_bytes(self, region: str, bucket: str, key: str) -> bytes: ...

    def exists(self, region: str, bucket: str, key: str) -> bool:
        """Whether the object exists (ListObjectsV2 on its key: GetObject of a missing key without s3:ListBucket
        answers 403, not 404)."""
        ...

    def put_events(self, region: str, entries: list[dict[str, Any]]) -> None: ...

    def put_metrics(self, region: str, namespace: str, data: list[dict[str, Any]]) -> None: ...
