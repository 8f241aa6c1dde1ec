"""What every boto3 adapter shares: a client it was given (tests), or the process's client for its service."""

from __future__ import annotations

import threading
import time
from typing import Any, ClassVar

from functions.shared.adapters.clients import client


class ClientAdapter:
    service: ClassVar[str]

    def __init__(self, aws_client: Any | None = None) -> None:
        self._given = aws_client

    @property
    def _aws(self) -> Any:
        return self._given or client(self.service)


class TtlCache:
    """A small per-process cache of answers by key."""

    def __init__(self, ttl_seconds: float) -> None:
        self._ttl = ttl_seconds
        self._items: dict[Any, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            found = self._items.get(key)
            return found[1] if found is not None and time.monotonic() - found[0] < self._ttl else None

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._items[key] = (time.monotonic(), value)
