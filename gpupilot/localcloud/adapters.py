"""Every adaptation of moto the local cloud needs, in one place.

1. Lambda: moto's docker-less Lambda echoes its input; here an invoke runs the function's real
   handler (by its `Handler` setting) in-process, with its stdout captured per call.
2. Batch: moto's docker-less Batch marks a job SUCCEEDED at submit; here the job is handed to the
   Batch simulator, which moves it through RUNNABLE, STARTING, RUNNING and its end as the world says.
3. EC2: instance type offerings per zone come from the world file instead of moto's static data.
4. Metrics: Powertools prints EMF to stdout; here those lines become CloudWatch `PutMetricData` calls
   on the embedded cloud, and log lines go to a log file, so the console shows only the product.
"""

from __future__ import annotations

import importlib
import io
import json
import sys
import threading
import traceback
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ALLOWED_HANDLER_PREFIX = "functions."


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

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


class ThreadStdout(io.TextIOBase):
    """sys.stdout that a thread can redirect for itself while other threads keep printing."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self._local = threading.local()

    def capture(self) -> io.StringIO:
        buffer = io.StringIO()
        self._local.buffer = buffer
        return buffer

    def release(self) -> None:
        self._local.buffer = None

    def write(self, text: str) -> int:
        target = getattr(self._local, "buffer", None) or self.real
        return target.write(text)

    def flush(self) -> None:
        self.real.flush()

    def isatty(self) -> bool:
        return bool(self.real.isatty())


def install_stdout() -> ThreadStdout:
    """Install the per-thread stdout once (before any handler module creates its Logger)."""
    if not isinstance(sys.stdout, ThreadStdout):
        sys.stdout = ThreadStdout(sys.stdout)
    return sys.stdout


def emf_to_metric_data(line: str) -> tuple[str, list[dict[str, Any]]] | None:
    """(namespace, MetricData) of one EMF log line, or None when the line is not EMF."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict) or "_aws" not in record:
        return None
    namespace = ""
    data: list[dict[str, Any]] = []
    for directive in record["_aws"].get("CloudWatchMetrics", []):
        namespace = directive["Namespace"]
        dimension_names = directive.get("Dimensions", [[]])[0] if directive.get("Dimensions") else []
        dimensions = [{"Name": n, "Value": str(record[n])} for n in dimension_names if n in record]
        for metric in directive.get("Metrics", []):
            values = record.get(metric["Name"])
            for value in values if isinstance(values, list) else [values]:
                if value is None:
                    continue
                data.append(
                    {
                        "MetricName": metric["Name"],
                        "Dimensions": dimensions,
                        "Value": float(value),
                        "Unit": metric.get("Unit", "None"),
                    }
                )
    return (namespace, data) if data else None


class HandlerDispatcher:
    """Runs the product's Lambda handlers in-process, counting invocations per handler."""

    def __init__(
        self,
        log_file: Path | None = None,
        metric_sink: Callable[[str, list[dict[str, Any]]], None] | None = None,
    ) -> None:
        self.invocations: Counter[str] = Counter()
        self._log_file = log_file
        self._metric_sink = metric_sink
        self._log_lock = threading.Lock()
        self._stdout = install_stdout()

    def invoke(self, handler_path: str, event: Any, function_name: str = "local", arn: str = "") -> tuple[Any, bool]:
        """(result, errored): errored results are Lambda's error shape, with errorType for ASL Catch."""
        if not handler_path.startswith(ALLOWED_HANDLER_PREFIX):
            raise ValueError(f"refusing to run handler {handler_path!r}: not a GPU Pilot function")
        module_name, _, attribute = handler_path.rpartition(".")
        handler = getattr(importlib.import_module(module_name), attribute)
        self.invocations[handler_path] += 1
        context = LocalContext(function_name=function_name, invoked_function_arn=arn or function_name)
        buffer = self._stdout.capture()
        try:
            return handler(event, context), False
        except Exception as error:
            return {
                "errorType": type(error).__name__,
                "errorMessage": str(error),
                "stackTrace": traceback.format_exception(error)[-5:],
            }, True
        finally:
            self._stdout.release()
            self._drain(buffer.getvalue())

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


def patch_lambda(dispatcher: HandlerDispatcher) -> None:
    """Make moto's docker-less Lambda run the real handlers."""
    from moto.awslambda_simple.models import LambdaSimpleBackend

    def invoke(
        self: Any, function_name: str, qualifier: str | None, body: Any, headers: Any, response_headers: Any
    ) -> bytes:
        fn = self.get_function(function_name, qualifier)
        event = json.loads(body) if body else {}
        result, errored = dispatcher.invoke(fn.handler, event, fn.function_name, fn.function_arn)
        if errored:
            response_headers["x-amz-function-error"] = "Unhandled"
        payload = json.dumps(result).encode()
        response_headers["Content-Length"] = str(len(payload))
        return payload

    LambdaSimpleBackend.invoke = invoke  # type: ignore[method-assign]


def patch_batch(on_submit: Callable[[Any], None]) -> None:
    """Hand each submitted Batch job to `on_submit` instead of letting moto finish it at once."""
    from moto.batch_simple.models import BatchSimpleBackend

    def mark_submitted(self: Any, include_start_attempt: bool, job: Any) -> None:
        self.backend._jobs[job.job_id] = job
        job.log_stream_name = job._stream_name
        on_submit(job)

    BatchSimpleBackend._mark_job_as_finished = mark_submitted  # type: ignore[method-assign]


def apply_offerings(region: str, zones: list[str], offered: dict[str, list[str]]) -> None:
    """Replace moto's per-zone offerings of the given instance types with `offered` (type -> zones)."""
    from moto.ec2.models.instance_types import INSTANCE_TYPE_OFFERINGS

    by_zone = INSTANCE_TYPE_OFFERINGS["availability-zone"]
    kept = [o for o in by_zone.get(region, []) if o["InstanceType"] not in offered]
    for instance_type, type_zones in offered.items():
        kept.extend({"InstanceType": instance_type, "Location": z} for z in type_zones if z in zones)
    by_zone[region] = kept
