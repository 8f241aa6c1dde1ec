"""What a function prints, as Lambda would keep it: each thread's stdout to its own invocation's log, the functions'
logger onto it, and the metrics of its embedded metric format lines read back as CloudWatch metric data."""

from __future__ import annotations

import io
import json
import logging
import sys
import threading
from typing import Any


class ThreadStdout(io.TextIOBase):
    """sys.stdout that a thread can redirect for itself while other threads keep printing. Captures nest: an
    invocation that runs another in its own thread (a synchronous Invoke, a task Step Functions runs inline)
    gets its own buffer back when the inner one ends."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self._local = threading.local()

    def _buffers(self) -> list[io.StringIO]:
        buffers: list[io.StringIO] | None = getattr(self._local, "buffers", None)
        if buffers is None:
            buffers = self._local.buffers = []
        return buffers

    def capture(self) -> io.StringIO:
        buffer = io.StringIO()
        self._buffers().append(buffer)
        return buffer

    def release(self, buffer: io.StringIO) -> None:
        buffers = self._buffers()
        if buffer in buffers:
            buffers.remove(buffer)

    def write(self, text: str) -> int:
        buffers = self._buffers()
        return (buffers[-1] if buffers else self.real).write(text)

    def flush(self) -> None:
        self.real.flush()

    def isatty(self) -> bool:
        return bool(self.real.isatty())


def install_stdout() -> ThreadStdout:
    """Install the per-thread stdout once (before any handler module creates its Logger)."""
    if not isinstance(sys.stdout, ThreadStdout):
        sys.stdout = ThreadStdout(sys.stdout)
    return sys.stdout


def function_logs_to(stdout: ThreadStdout) -> None:
    """Point the functions' Logger at the per-thread stdout. Powertools' Logger keeps the stream it found when it
    was made, which is the process's real stdout if anything imported the functions before the first invocation
    (or a test runner swapped sys.stdout since): its lines would reach the console instead of the log file."""
    observability = sys.modules.get("functions.shared.observability")
    handler = getattr(getattr(observability, "logger", None), "registered_handler", None)
    if isinstance(handler, logging.StreamHandler) and handler.stream is not stdout:
        handler.setStream(stdout)


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
