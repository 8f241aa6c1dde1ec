"""The one place boto3 clients are made: standard retry mode, the process's region.

The local cloud points every client at its embedded AWS through `AWS_ENDPOINT_URL`,
which botocore honours natively, so no code path differs between local and deployed.
"""

from __future__ import annotations

import threading
from typing import Any

import boto3
from botocore.config import Config

from functions.shared.config import settings

RETRY_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 5},
    connect_timeout=5,
    read_timeout=30,
)

_lock = threading.Lock()
_clients: dict[str, Any] = {}


def client(service: str) -> Any:
    """A cached boto3 client for `service` (clients are thread-safe; sessions are not)."""
    with _lock:
        existing = _clients.get(service)
        if existing is None:
            existing = boto3.session.Session().client(service, region_name=settings().region, config=RETRY_CONFIG)
            _clients[service] = existing
        return existing


def reset_clients() -> None:
    """Forget cached clients and settings (tests and the local cloud change the environment)."""
    with _lock:
        _clients.clear()
    settings.cache_clear()
