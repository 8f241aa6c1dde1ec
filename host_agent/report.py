"""What the agent tells the control plane: one EventBridge event per thing that happened to an attempt (it started,
EC2 gave notice, the notice's checkpoint was uploaded, its GPUs idled past its idle_policy, it ended), each a snapshot
of everything the agent knows of the attempt, so that a report lost or overtaken loses nothing the next one does not
say. A bounded number per attempt, whatever its length: the control plane's cost of a job does not grow with its
runtime: the minute by minute goes to CloudWatch instead (GpuUtilization, per job and per pool)."""

from __future__ import annotations

import json
import time
from typing import Any

SOURCE = "gpupilot.agent"
DETAIL_TYPE = "GPU Pilot Host Agent Report"
STARTED, NOTICE, CHECKPOINT, IDLE, ENDED = "started", "notice", "checkpoint", "idle", "ended"
NAMESPACE, SERVICE, UTILIZATION_METRIC = "GpuPilot", "gpupilot", "GpuUtilization"


def iso(epoch: float | None) -> str | None:
    """ISO 8601 UTC with milliseconds and Z, as GPU Pilot writes every time."""
    if epoch is None:
        return None
    millis = round(epoch * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(millis // 1000)) + f".{millis % 1000:03d}Z"


def entry(detail: dict[str, Any]) -> dict[str, Any]:
    """A PutEvents entry for the home region's default bus."""
    return {"Source": SOURCE, "DetailType": DETAIL_TYPE, "Detail": json.dumps(detail, sort_keys=True)}


def metric_data(job_id: str, pool: str, statistics: dict[str, float], at: float) -> list[dict[str, Any]]:
    """A minute of one job's GpuUtilization (percent), under its job and under its pool."""
    named = [[{"Name": "service", "Value": SERVICE}, {"Name": "job", "Value": job_id}]]
    if pool:
        named.append([{"Name": "service", "Value": SERVICE}, {"Name": "pool", "Value": pool}])
    return [{"MetricName": UTILIZATION_METRIC, "Dimensions": dimensions, "Timestamp": at, "StatisticValues": statistics,
             "Unit": "Percent"} for dimensions in named]  # fmt: skip
