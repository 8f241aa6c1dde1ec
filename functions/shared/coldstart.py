"""A Lambda sandbox's cold start runs with Python's cyclic garbage collector paused.

What a cold start allocates lives as long as the sandbox: modules, classes, pydantic's validators, and
botocore's service models, which the first invocation loads (adapters make their clients on first use). The
collector's passes over that growing heap find almost nothing to free, yet cost about a fifth of the cold
start's CPU (bench/results/cold_start.json: the boto3 floor with and without it). Reference counting still
frees everything that is not in a cycle, so pausing the collector only defers cyclic garbage.

In Lambda only (the runtime sets AWS_EXECUTION_ENV to `AWS_Lambda_<runtime>`), importing `functions` pauses the
collector and the end of the sandbox's first invocation resumes it. Anywhere else (tests, the local cloud, the
CLI, CDK synth) nothing changes.
"""

from __future__ import annotations

import functools
import gc
import os
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

LAMBDA_RUNTIME_PREFIX = "AWS_Lambda_"
Handler = TypeVar("Handler", bound=Callable[..., Any])

_paused = False


def in_lambda(environ: Mapping[str, str] = os.environ) -> bool:
    return environ.get("AWS_EXECUTION_ENV", "").startswith(LAMBDA_RUNTIME_PREFIX)


def pause_collector() -> None:
    """Pause the collector for the cold start, in Lambda only (`functions/__init__.py` calls this first)."""
    global _paused
    if in_lambda() and gc.isenabled():
        gc.disable()
        _paused = True


def resume_collector() -> None:
    """Resume the collector if the cold start paused it."""
    global _paused
    if _paused:
        _paused = False
        gc.enable()


def ends_cold_start(handler: Handler) -> Handler:
    """The handler's first invocation, however it ends, ends the cold start: the collector resumes."""

    @functools.wraps(handler)
    def invoked(*args: Any, **kwargs: Any) -> Any:
        try:
            return handler(*args, **kwargs)
        finally:
            resume_collector()

    return invoked  # type: ignore[return-value]
