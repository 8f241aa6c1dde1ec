"""The one place boto3 clients are made: standard retry mode, the process's region.

Market signals (Service Quotas, spot price history, spot placement scores, the Price List) are hints a plan goes on
without, so their clients give up sooner: two attempts in all (standard mode's one backoff waits at most 1 s for a
throttle, at most 5 s more if AWS asks for it with x-amz-retry-after) where the others make six (`max_attempts`
counts retries: up to 1 + 2 + 4 + 8 + 16 s of backoff). A plan reads at most eight such calls (five quotas, a
Price List page, spot prices, placement scores), so one whose every signal is throttled answers in seconds, well
within API Gateway's 29 s.

The local cloud points every client at its embedded AWS through `AWS_ENDPOINT_URL`, which botocore
honours natively, so no code path differs between local and deployed. Observers registered with
`observe_calls` see every AWS call any client makes (the local cloud's IAM enforcement, fault injection).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import boto3
from botocore.config import Config

from functions.shared.adapters.config import aws_region, reset_settings

RETRY_CONFIG = Config(
    retries={"mode": "standard", "max_attempts": 5},
    connect_timeout=5,
    read_timeout=30,
)
HINT_RETRY_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": 2},
    connect_timeout=2,
    read_timeout=5,
)
# A call that must never be sent twice: PurchaseCapacityBlock takes no client token, so a retry after an answer lost
# on its way back (a 5xx, a time-out) could buy a second block. It is made once; whoever asked sees the failure.
ONCE_CONFIG = Config(retries={"mode": "standard", "total_max_attempts": 1}, connect_timeout=5, read_timeout=60)
CallObserver = Callable[..., None]

_lock = threading.Lock()
_clients: dict[str, Any] = {}
_session: boto3.session.Session | None = None
_observers: list[tuple[str, CallObserver]] = []


def client(service: str, region: str | None = None, hint: bool = False, once: bool = False) -> Any:
    """A cached boto3 client for `service`, in the process's region unless the API answers elsewhere only
    (the Price List API: us-east-1); `hint`: for a market signal, which gives up after two attempts; `once`: for a
    call that must never be repeated (a purchase), which makes one attempt.

    Clients are thread-safe, sessions are not: one session makes every client, under the lock. One
    session also loads botocore's data files once, which halves a cold start that makes four clients.
    """
    global _session
    with _lock:
        name = (service if region is None else f"{service}@{region}") + ("#hint" if hint else "") + ("#once" * once)
        existing = _clients.get(name)
        if existing is None:
            if _session is None:
                _session = boto3.session.Session()
                for event, observer in _observers:
                    _session.events.register(event, observer)
            config = ONCE_CONFIG if once else HINT_RETRY_CONFIG if hint else RETRY_CONFIG
            existing = _session.client(service, region_name=region or aws_region(), config=config)
            _clients[name] = existing
        return existing


def observe_calls(observer: CallObserver, event: str = "before-parameter-build") -> None:
    """Call `observer` on a botocore event of every AWS call any client makes (by default
    `before-parameter-build`: the operation's model and its API parameters; raising refuses the call)."""
    with _lock:
        _observers.append((event, observer))
        if _session is not None:
            _session.events.register(event, observer)


def stop_observing(observer: CallObserver) -> None:
    with _lock:
        for event, registered in [entry for entry in _observers if entry[1] is observer]:
            _observers.remove((event, registered))
            if _session is not None:
                _session.events.unregister(event, registered)


def reset_clients() -> None:
    """Forget cached clients, the session and settings (tests and the local cloud change the environment)."""
    global _session
    with _lock:
        _clients.clear()
        _session = None
    reset_settings()
