"""Fault injection for the local cloud, from the world file's `faults`: AWS throttling per service, AWS refusing
an operation, Batch events dropped, duplicated or reordered, and Lambda invocations failing as the Lambda service
can.

Faults hit what the product does, never the simulated AWS itself: a throttle answers one of a handler's AWS
calls (before it is sent) with the throttling error that service returns, in that service's protocol, so
botocore's retries, the adapters' transient errors and the workflow's Retry see what they would see in AWS; a
refusal answers every call to its operation with the error the world names (AccessDenied from an organisation's
policy, a daily limit, throttling that outlasts the retries).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from botocore.awsrequest import AWSResponse

from gpupilot.localcloud.world import REFUSABLE, FaultsWorld

# What each service answers when it throttles (error code, HTTP status), and how its protocol carries it.
THROTTLES: dict[str, tuple[str, int]] = {
    "batch": ("TooManyRequestsException", 429),
    "ec2": ("RequestLimitExceeded", 503),
    "dynamodb": ("ThrottlingException", 400),
    "stepfunctions": ("ThrottlingException", 400),
    "ecs": ("ThrottlingException", 400),
    "lambda": ("TooManyRequestsException", 429),
}
# botocore names a few services by another id in its event names.
SERVICE_IDS = {"sfn": "stepfunctions"}
# A reordered event is held back until the next one has gone, or this long at most.
REORDER_HOLD_SECONDS = 0.5
EventSink = Callable[[dict[str, Any]], None]


class _Body:
    """The raw body botocore reads from a response."""

    def __init__(self, content: bytes) -> None:
        self._content = content

    def stream(self, **_: Any) -> Any:
        yield self._content


def throttle_response(service: str, url: str) -> AWSResponse:
    """The throttling answer of `service`, as its wire protocol carries it."""
    code, status = THROTTLES[service]
    return error_response(service, code, status, url, "Rate exceeded (injected by the local cloud's faults)")


def error_response(service: str, code: str, status: int, url: str, message: str) -> AWSResponse:
    """An AWS error answer of `service`, as its wire protocol carries it (EC2's XML, the others' JSON)."""
    if service == "ec2":
        body = (
            f"<Response><Errors><Error><Code>{code}</Code><Message>{message}</Message></Error></Errors>"
            "<RequestID>local-fault</RequestID></Response>"
        ).encode()
        headers = {"Content-Type": "text/xml"}
    else:
        body = json.dumps({"__type": code, "message": message}).encode()
        headers = {"Content-Type": "application/x-amz-json-1.0", "x-amzn-ErrorType": code}
    return AWSResponse(url, status, headers, _Body(body))


class Faults:
    """The world's faults, drawn from one seeded random source (a run is reproducible up to thread timing)."""

    def __init__(self, world: FaultsWorld, seed: int | None = None) -> None:
        self.world = world
        self._random = random.Random(seed if seed is not None else world.seed)
        self._lock = threading.Lock()
        self.injected: dict[str, int] = {}

    def _draw(self, probability: float, kind: str) -> bool:
        if probability <= 0:
            return False
        with self._lock:
            hit = self._random.random() < probability
            if hit:
                self.injected[kind] = self.injected.get(kind, 0) + 1
        return hit

    # -- AWS throttling ------------------------------------------------------------------------------
    def throttle(self, request: Any = None, event_name: str = "", **_: Any) -> AWSResponse | None:
        """botocore `before-send`: answer the call with its service's throttling error, sometimes."""
        service_id = event_name.split(".")[1] if event_name.count(".") >= 1 else ""
        service = SERVICE_IDS.get(service_id, service_id)
        probability = next((p for name, p in self.world.throttle.items() if name == service), 0.0)
        if service in THROTTLES and self._draw(probability, f"throttle:{service}"):
            return throttle_response(service, getattr(request, "url", ""))
        return None

    # -- AWS refusals ----------------------------------------------------------------------------------
    def refuse(self, request: Any = None, event_name: str = "", **_: Any) -> AWSResponse | None:
        """botocore `before-send`: answer every call to an operation the world refuses with the world's error."""
        parts = event_name.split(".")
        operation = parts[2] if len(parts) > 2 else ""
        code = self.world.refuse.get(operation)
        if code is None:
            return None
        with self._lock:
            self.injected[f"refuse:{operation}"] = self.injected.get(f"refuse:{operation}", 0) + 1
        message = f"{operation} refused (the local cloud's world: faults.refuse)"
        return error_response(parts[1], code, REFUSABLE[operation][code], getattr(request, "url", ""), message)

    # -- Lambda ----------------------------------------------------------------------------------------
    def lambda_error(self, function_key: str) -> bool:
        """Whether this invocation fails before the function runs (Lambda.ServiceException)."""
        return self._draw(self.world.lambda_errors, f"lambda_error:{function_key}")

    # -- Batch events ---------------------------------------------------------------------------------
    def events(self, deliver: EventSink) -> EventSink:
        """`deliver`, with the world's event faults: dropped, delivered twice, or held back past the next."""
        held: list[tuple[float, dict[str, Any]]] = []
        lock = threading.Lock()

        def release_expired() -> None:
            with lock:
                due = [e for at, e in held if time.monotonic() - at >= REORDER_HOLD_SECONDS]
                held[:] = [(at, e) for at, e in held if time.monotonic() - at < REORDER_HOLD_SECONDS]
            for event in due:
                deliver(event)

        def faulty(event: dict[str, Any]) -> None:
            faults = self.world.events
            if self._draw(faults.drop, "event:drop"):
                release_expired()
                return
            copies = 2 if self._draw(faults.duplicate, "event:duplicate") else 1
            if faults.reorder and self._draw(0.5, "event:reorder"):
                with lock:
                    held.append((time.monotonic(), event))
                threading.Timer(REORDER_HOLD_SECONDS, release_expired).start()
                return
            for _ in range(copies):
                deliver(event)
            with lock:
                later, held[:] = list(held), []
            for _, event in later:  # held back: now after the one that overtook it
                deliver(event)

        return faulty
