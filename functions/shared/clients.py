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
_session: boto3.session.Session | None = None


def client(service: str) -> Any:
    """A cached boto3 client for `service`.

    Clients are thread-safe, sessions are not: one session makes every client, under the lock. One
    session also loads botocore's data files once, which halves a cold start that makes four clients.
    """
    global _session
    with _lock:
        existing = _clients.get(service)
        if existing is None:
            if _session is None:
                _session = boto3.session.Session()
            existing = _session.client(service, region_name=settings().region, config=RETRY_CONFIG)
            _clients[service] = existing
        return existing


def reset_clients() -> None:
    """Forget cached clients, the session and settings (tests and the local cloud change the environment)."""
    global _session
    with _lock:
        _clients.clear()
        _session = None
    settings.cache_clear()
