"""Logger and Metrics, created once per process.

Tracing is done by Lambda's active X-Ray tracing and Step Functions' tracing, declared in the stack,
not by the Powertools Tracer: its X-Ray SDK import alone adds 0.3-0.55x the boto3 floor to every cold
start (bench/results/cold_start.json: the Powertools stack with and without Tracer).

A job's environment values may be secrets, so no log line carries them: whatever is logged (an event, when an
operator turns on Powertools' POWERTOOLS_LOGGER_LOG_EVENT, or a record's extra keys) has its `environment`
values masked and its names kept.
"""

from __future__ import annotations

import json
import logging
import warnings
from typing import Any

from aws_lambda_powertools import Logger, Metrics

from functions.shared import constants as c

REDACTED = "***"
# A LogRecord's own attributes; any other attribute is an `extra` key of the call that logged it.
_RECORD_ATTRIBUTES = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


def redact(value: Any) -> Any:
    """`value` with every environment value masked, wherever it sits: a request's `environment` (NAME -> value),
    Batch's job detail (`environment`: [{name, value}]), a Lambda configuration's `Environment`, and API
    Gateway's `body`, the request as JSON text (a body that is not JSON is withheld whole)."""
    if isinstance(value, dict):
        return {key: _redact_entry(key, item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    return value


def _redact_entry(key: Any, item: Any) -> Any:
    if isinstance(key, str) and key.lower() == "environment":
        return _masked(item)
    if key == "body" and isinstance(item, str):
        try:
            return json.dumps(redact(json.loads(item)))
        except ValueError:
            return f"<{len(item)} characters withheld: not JSON>"
    return redact(item)


def _masked(environment: Any) -> Any:
    if isinstance(environment, dict):
        return {name: _masked(value) if isinstance(value, dict) else REDACTED for name, value in environment.items()}
    if isinstance(environment, list | tuple):
        return [
            {**entry, "value": REDACTED} if isinstance(entry, dict) and "value" in entry else REDACTED
            for entry in environment
        ]
    return REDACTED


class RedactEnvironment(logging.Filter):
    """Masks environment values in a record's message, arguments and extra keys before any handler formats it."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact(record.msg)
        if isinstance(record.args, dict):
            record.args = redact(record.args)
        elif isinstance(record.args, tuple):
            record.args = tuple(redact(list(record.args)))
        for name, value in list(vars(record).items()):
            if name not in _RECORD_ATTRIBUTES and isinstance(value, dict | list | tuple | str):
                setattr(record, name, _redact_entry(name, value))
        return True


logger = Logger(service=c.SERVICE_NAME)
logger.addFilter(RedactEnvironment())
metrics = Metrics(namespace=c.METRICS_NAMESPACE, service=c.SERVICE_NAME)

# Handlers flush metrics on every invocation; most invocations of the api add none, which is fine.
warnings.filterwarnings("ignore", message="No application metrics to publish")
