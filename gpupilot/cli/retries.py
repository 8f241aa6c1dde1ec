"""What the API client retries and how: transient answers of a request that is safe to repeat, with bounded
exponential backoff and jitter, Retry-After honoured and capped; and a failure's root cause in a few words."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import urllib3
from urllib3.util.retry import Retry

# Transient answers, retried on a request that is safe to repeat: this many times at most, the first at once
# (urllib3's way), the next after 2, 4, 8, 16 x BACKOFF_FACTOR seconds plus up to BACKOFF_JITTER, each at most
# BACKOFF_MAX: 0, 1, 2, 4, 8 s, about 16 s in all. A Retry-After (429, 503) is honoured, up to
# RETRY_AFTER_MAX_SECONDS.
TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})
TRANSIENT_RETRIES = 5
BACKOFF_FACTOR = 0.5
BACKOFF_MAX = 8.0
BACKOFF_JITTER = 0.5
RETRY_AFTER_MAX_SECONDS = 30.0
IDEMPOTENCY_HEADER = "Idempotency-Key"


class TransientRetry(Retry):
    """urllib3's Retry, with Retry-After honoured on 429 and 503 only (never on another 4xx) and capped."""

    RETRY_AFTER_STATUS_CODES = frozenset({429, 503})

    def get_retry_after(self, response: Any) -> float | None:
        seconds = super().get_retry_after(response)
        return None if seconds is None else min(seconds, RETRY_AFTER_MAX_SECONDS)


def safe_to_repeat(method: str, path: str, headers: Mapping[str, str] | None) -> bool:
    """Whether sending the request again cannot do anything twice."""
    if method in ("GET", "HEAD") or (method == "POST" and path == "/plan"):
        return True
    keyed = any(name.lower() == IDEMPOTENCY_HEADER.lower() and value for name, value in (headers or {}).items())
    return method == "POST" and path == "/jobs" and keyed


def root_cause(error: BaseException) -> str:
    """The root cause in a few words: the operating system's ("Connection refused", "Connection reset by peer",
    "Name or service not known"), "timed out", else the innermost error's own words."""
    seen: set[int] = set()
    cause: BaseException | None = error
    innermost = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        innermost = cause
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror
        if isinstance(cause, TimeoutError | urllib3.exceptions.TimeoutError) and not isinstance(
            cause, urllib3.exceptions.NewConnectionError
        ):
            return "timed out"
        # urllib3 keeps the cause in `reason` (MaxRetryError) or in its arguments (ProtocolError).
        inner = [getattr(cause, "reason", None), cause.__cause__, *cause.args]
        cause = next((e for e in inner if isinstance(e, BaseException)), None)
    return str(innermost)
