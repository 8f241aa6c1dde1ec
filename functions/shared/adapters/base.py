"""What every boto3 adapter shares: a client it was given (tests), or the process's client for its service."""

from __future__ import annotations

import threading
import time
from typing import Any, ClassVar

from botocore.exceptions import BotoCoreError, ClientError

from functions.shared.adapters.clients import client
from functions.shared.domain.core.errors import SignalUnavailable, aws_error_parts

# What a failed AWS call raises once botocore has given up on it (its retries included).
AWS_ERRORS = (BotoCoreError, ClientError)


class ClientAdapter:
    service: ClassVar[str]
    # A market signal's adapter: its calls give up after two attempts (clients.HINT_RETRY_CONFIG).
    hint: ClassVar[bool] = False

    def __init__(self, aws_client: Any | None = None, region: str | None = None) -> None:
        self._given = aws_client
        # The region its calls go to (a capacity region's Batch, EC2, ECS): None, the process's own.
        self._region = region

    @property
    def _aws(self) -> Any:
        return self._given or client(self.service, self._region, hint=self.hint)


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


def signal_unavailable(operation: str, error: Exception) -> SignalUnavailable:
    """A market-signal call that failed (AWS refused it, or it failed past botocore's retries), in the domain's
    words: AWS's error code, else the SDK's error class (no answer came back)."""
    return SignalUnavailable(operation, *aws_error_parts(error))
