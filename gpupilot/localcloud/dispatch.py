"""Running the product's Lambda handlers in-process, as Lambda would run them.

Each invocation runs with the environment the synthesized template gives that function (not one shared
environment), under its own name (so an AWS call is attributed to the function that made it), with its
stdout captured: Powertools' EMF lines become CloudWatch `PutMetricData` calls on the embedded cloud and
log lines go to a log file, so the console shows only the product. An asynchronous invocation runs in
the background, is retried twice on error as Lambda does, and then lands in the function's on-failure
queue, when the template gives it one. The seconds each handler spends in `time.sleep` are counted: a sleep
on the path every job takes is latency a Lambda would bill, whatever the machine's speed.
"""

from __future__ import annotations

import contextvars
import dataclasses
import importlib
import sys
import threading
import time
import traceback
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, SupportsIndex

from functions.shared.adapters.config import function_environment
from gpupilot.localcloud.function_output import emf_to_metric_data, function_logs_to, install_stdout
from gpupilot.localcloud.isolation import isolate

ALLOWED_HANDLER_PREFIX = "functions."
ASYNC_RETRIES = 2  # Lambda retries a failed asynchronous invocation twice
# The function whose handler this thread (or task) is running: AWS calls are attributed to it.
current_function: contextvars.ContextVar[str | None] = contextvars.ContextVar("gpupilot_function", default=None)
_real_sleep = time.sleep
# The seconds the handler invocation this thread runs has spent in time.sleep so far (None: no invocation).
_asleep: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar("gpupilot_asleep", default=None)


def counted_sleep(seconds: float | SupportsIndex) -> None:
    """time.sleep, adding the time it blocks to the tally of the handler invocation that calls it (if any; a sleep of
    0, which only yields the interpreter, is not counted)."""
    tally = _asleep.get()
    if tally is None or float(seconds) <= 0:
        _real_sleep(seconds)
        return
    began = time.monotonic()
    try:
        _real_sleep(seconds)
    finally:
        tally[0] += time.monotonic() - began


def install_sleep_accounting() -> None:
    """time.sleep counted from now on, also where a module of the functions already bound it by name (`from time
    import sleep`). A library that bound it at its import (botocore's retry backoff) keeps the real one."""
    time.sleep = counted_sleep
    for name, module in list(sys.modules.items()):
        if name == "functions" or name.startswith(ALLOWED_HANDLER_PREFIX):
            for attribute, value in list(vars(module).items()):
                if value is _real_sleep:
                    setattr(module, attribute, counted_sleep)


@dataclass(frozen=True)
class LocalFunction:
    """One deployed function, as the template declares it."""

    key: str
    name: str
    arn: str
    handler: str
    environment: Mapping[str, str]
    failure_queue_url: str | None = None
    timeout_seconds: int = 60


@dataclass
class LocalContext:
    """The parts of Lambda's context object that Powertools reads."""

    function_name: str
    invoked_function_arn: str
    memory_limit_in_mb: int = 512
    function_version: str = "$LATEST"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = ""
    log_stream_name: str = "local"
    timeout_seconds: float = 60
    started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        """As Lambda's: what is left of the function's timeout since the invocation began (Powertools' idempotency
        lets a key held by a call in progress go once that call would have timed out)."""
        return max(0, int((self.started + self.timeout_seconds - time.monotonic()) * 1000))


class HandlerDispatcher:
    """Runs the product's Lambda handlers in-process, counting invocations per handler."""

    def __init__(
        self,
        functions: Mapping[str, LocalFunction] | None = None,
        log_file: Path | None = None,
        metric_sink: Callable[[str, list[dict[str, Any]]], None] | None = None,
        failure_sink: Callable[[LocalFunction, dict[str, Any]], None] | None = None,
    ) -> None:
        self.functions: dict[str, LocalFunction] = dict(functions or {})
        self.invocations: Counter[str] = Counter()
        # Per handler: the seconds its invocations spent in time.sleep, and how many invocations slept at all.
        self.asleep_seconds: defaultdict[str, float] = defaultdict(float)
        self.sleeping_invocations: Counter[str] = Counter()
        self._sleep_lock = threading.Lock()
        install_sleep_accounting()
        self._log_file = log_file
        self._metric_sink = metric_sink
        self._failure_sink = failure_sink
        self._log_lock = threading.Lock()
        self._background: list[threading.Thread] = []
        # Fault injection: whether an invocation of this function fails before it runs (the world's faults).
        self.fails: Callable[[str], bool] = lambda _key: False

    def by_name(self, name_or_arn: str) -> LocalFunction:
        for function in self.functions.values():
            if name_or_arn in (function.name, function.arn, function.key):
                return function
        raise KeyError(f"no function {name_or_arn!r} in the local deployment")

    def update_environment(self, name_or_arn: str, variables: Mapping[str, str]) -> None:
        """UpdateFunctionConfiguration: the next invocation runs with these variables (and only these)."""
        function = self.by_name(name_or_arn)
        self.functions[function.key] = dataclasses.replace(function, environment=dict(variables))

    def invoke(self, key: str, event: Any) -> tuple[Any, bool]:
        """(result, errored): errored results are Lambda's error shape, with errorType for ASL Catch."""
        function = self.functions[key]
        if not function.handler.startswith(ALLOWED_HANDLER_PREFIX):
            raise ValueError(f"refusing to run handler {function.handler!r}: not a GPU Pilot function")
        module_name, _, attribute = function.handler.rpartition(".")
        module = importlib.import_module(module_name)
        isolate(module)  # concurrent invocations, each its own environment's request state
        handler = getattr(module, attribute)
        self.invocations[function.handler] += 1
        if self.fails(key):
            # What Step Functions and the asynchronous invoker see when the Lambda service fails an invocation.
            return {
                "errorType": "Lambda.ServiceException",
                "errorMessage": "injected by the local cloud's faults",
            }, True
        context = LocalContext(
            function_name=function.name, invoked_function_arn=function.arn, timeout_seconds=function.timeout_seconds
        )
        # Re-installed if someone (a test runner) replaced sys.stdout since.
        stdout = install_stdout()
        function_logs_to(stdout)
        buffer = stdout.capture()
        token = current_function.set(function.key)
        tally = [0.0]
        asleep = _asleep.set(tally)
        try:
            with function_environment(function.environment):
                return handler(event, context), False
        except Exception as error:
            return {
                "errorType": type(error).__name__,
                "errorMessage": str(error),
                "stackTrace": traceback.format_exception(error)[-5:],
            }, True
        finally:
            _asleep.reset(asleep)
            current_function.reset(token)
            if tally[0]:
                with self._sleep_lock:
                    self.asleep_seconds[function.handler] += tally[0]
                    self.sleeping_invocations[function.handler] += 1
            stdout.release(buffer)
            self._drain(buffer.getvalue())

    def invoke_as_event(self, key: str, event: Any) -> bool:
        """An asynchronous invocation, in the caller's thread: retried as Lambda retries it, then its record
        goes to the function's on-failure destination. True when it succeeded."""
        result: Any = None
        for _ in range(1 + ASYNC_RETRIES):
            result, errored = self.invoke(key, event)
            if not errored:
                return True
        if self._failure_sink is not None:
            self._failure_sink(self.functions[key], {"requestPayload": event, "responsePayload": result})
        return False

    def invoke_async(self, key: str, event: Any) -> threading.Thread:
        """An Event invocation in the background (Lambda answers 202 at once)."""
        thread = threading.Thread(
            target=self.invoke_as_event, args=(key, event), name=f"gpupilot-async-{key}", daemon=True
        )
        thread.start()
        self._background.append(thread)
        return thread

    def join_background(self, timeout: float = 60) -> None:
        """Wait for the asynchronous invocations started so far."""
        for thread in list(self._background):
            thread.join(timeout)

    def _drain(self, output: str) -> None:
        log_lines = []
        for line in output.splitlines():
            metric = emf_to_metric_data(line) if '"_aws"' in line else None
            if metric and self._metric_sink:
                self._metric_sink(*metric)
            elif line.strip():
                log_lines.append(line)
        if log_lines and self._log_file:
            with self._log_lock, self._log_file.open("a") as log:
                log.write("\n".join(log_lines) + "\n")
