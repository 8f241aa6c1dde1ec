"""Logger and Metrics, created once per process.

Tracing is done by Lambda's active X-Ray tracing and Step Functions' tracing, declared in the stack,
not by the Powertools Tracer: its X-Ray SDK import alone adds 0.3-0.55x the boto3 floor to every cold
start (bench/results/cold_start.json: the Powertools stack with and without Tracer).
"""

from __future__ import annotations

import warnings

from aws_lambda_powertools import Logger, Metrics

from functions.shared import constants as c

logger = Logger(service=c.SERVICE_NAME)
metrics = Metrics(namespace=c.METRICS_NAMESPACE, service=c.SERVICE_NAME)

# Handlers flush metrics on every invocation; most invocations of the api add none, which is fine.
warnings.filterwarnings("ignore", message="No application metrics to publish")
