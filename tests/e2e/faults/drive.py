"""Drive jobs through a local cloud with faults, as a careful client would, and account for every one: the
fault tests' and the fault benchmark's common part."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3

from gpupilot.cli.client import ApiClient, ApiUnreachable, StillInProgress

FINISHED = {"SUCCEEDED", "FAILED", "CANCELLED"}
IMAGE = "nvidia/cuda:12.4.1-base-ubuntu22.04"
STUCK_AFTER_MINUTES = 0.5
# How a job's workflow got past its waits, read from its execution history: every wait resumed by the attempt's
# Batch status on its record (written by job_events from an event, or by the sweep's replay of a missed one), or a
# start wait that timed out and DiagnoseStuckJob that moved it on.
RESUMED = "waits resumed"
DIAGNOSED = "stuck-job diagnosis"


def http(method: str, url: str, body: Any = None, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"} | (headers or {})
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


@dataclass
class Accounting:
    """What became of the jobs a run submitted."""

    submitted: int = 0
    accepted: dict[str, str] = field(default_factory=dict)  # job id -> name
    statuses: Counter[str] = field(default_factory=Counter)
    not_terminal: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)  # no record, or a record Batch contradicts (an end it missed)
    duplicated: list[str] = field(default_factory=list)  # names recorded more than once
    finished_by: dict[str, str] = field(default_factory=dict)  # job id -> RESUMED or DIAGNOSED, of finished jobs

    def summary(self) -> dict[str, Any]:
        return {
            "submitted": self.submitted,
            "accepted": len(self.accepted),
            "statuses": dict(self.statuses),
            "not_terminal": self.not_terminal,
            "lost": self.lost,
            "duplicated": self.duplicated,
            "finished_by": dict(Counter(self.finished_by.values())),
        }


def submit(api_url: str, name: str, runs: int = 5, stuck_after_minutes: float = STUCK_AFTER_MINUTES) -> str | None:
    """POST /jobs as `gpupilot submit --idempotency-key` sends it (gpupilot.cli.client: transient failures retried with
    backoff, a 409 IN_PROGRESS waited out after each Retry-After, for 30 s), run again with the same key when it
    gives up, as its user would: one job, whatever fails."""
    client = ApiClient(api_url)
    key = uuid.uuid4().hex
    body = {"name": name, "image": IMAGE, "command": ["nvidia-smi", "-L"], "stuck_after_minutes": stuck_after_minutes}
    for _ in range(runs):
        try:
            response = client.request("POST", "/jobs", body, headers={"Idempotency-Key": key})
        except (StillInProgress, ApiUnreachable):
            continue
        if response.status == 202:
            return str(response.body["job_id"])
        if 400 <= response.status < 500:
            raise AssertionError(f"POST /jobs refused {name}: {response.status} {response.body}")
    return None


def job(api_url: str, job_id: str) -> dict[str, Any] | None:
    """The job's record; None when it does not exist. Retried through injected service errors."""
    for _ in range(20):
        status, answer = http("GET", f"{api_url}/jobs/{job_id}")
        if status == 200:
            return dict(answer)
        if status == 404:
            return None
        time.sleep(0.3)
    raise AssertionError(f"GET /jobs/{job_id} kept failing")


def run_jobs(
    api_url: str,
    aws_url: str,
    count: int,
    prefix: str,
    timeout: float,
    stuck_after_minutes: float = STUCK_AFTER_MINUTES,
) -> Accounting:
    """Submit `count` jobs, wait until each is finished (or the time is up), then check every record against
    Batch, look for duplicates, and read from each finished job's execution history how it got past its waits."""
    accounting = Accounting(submitted=count)
    for index in range(count):
        name = f"{prefix}-{index}"
        job_id = submit(api_url, name, stuck_after_minutes=stuck_after_minutes)
        if job_id is not None:
            accounting.accepted[job_id] = name
    deadline = time.monotonic() + timeout
    final: dict[str, dict[str, Any] | None] = {}
    while time.monotonic() < deadline:
        final = {job_id: job(api_url, job_id) for job_id in accounting.accepted}
        if all(record is None or record["status"] in FINISHED for record in final.values()):
            break
        time.sleep(1)
    batch = aws(aws_url, "batch")
    sfn = aws(aws_url, "stepfunctions")
    for job_id, record in final.items():
        if record is None:
            accounting.lost.append(job_id)
            continue
        accounting.statuses[record["status"]] += 1
        batch_id = (record.get("attempts") or [{}])[-1].get("batch_job_id")
        described = batch.describe_jobs(jobs=[batch_id])["jobs"] if batch_id else []
        batch_status = described[0]["status"] if described else None
        if record["status"] not in FINISHED:
            accounting.not_terminal.append(job_id)
            if batch_status in FINISHED:
                accounting.lost.append(job_id)  # Batch ended it; the record never learnt
        elif record["status"] == "SUCCEEDED" and batch_status != "SUCCEEDED":
            accounting.lost.append(job_id)  # the record says what Batch does not
        if record["status"] in FINISHED and record.get("execution_arn"):
            accounting.finished_by[job_id] = how_finished(sfn, record["execution_arn"])
    names = Counter(j["name"] for j in list_all(api_url) if j["name"].startswith(f"{prefix}-"))
    accounting.duplicated = sorted(name for name, seen in names.items() if seen > 1)
    return accounting


def aws(aws_url: str, service: str) -> Any:
    """A client of the local cloud's embedded AWS."""
    return boto3.client(
        service, endpoint_url=aws_url, region_name="us-east-1",
        aws_access_key_id="testing", aws_secret_access_key="testing",
    )  # fmt: skip


def how_finished(sfn: Any, execution_arn: str) -> str:
    """DIAGNOSED when a wait of the execution timed out or DiagnoseStuckJob ran, else RESUMED."""
    kwargs: dict[str, Any] = {"executionArn": execution_arn, "maxResults": 1000}
    while True:
        page = sfn.get_execution_history(**kwargs)
        for event in page["events"]:
            entered = event.get("stateEnteredEventDetails", {}).get("name")
            if event["type"] == "TaskTimedOut" or entered == "DiagnoseStuckJob":
                return DIAGNOSED
        if not page.get("nextToken"):
            return RESUMED
        kwargs["nextToken"] = page["nextToken"]


def metric_sum(aws_url: str, name: str) -> float:
    """The sum of every datapoint of GPU Pilot's metric `name` the local cloud has received, whatever its
    dimensions."""
    cloudwatch = aws(aws_url, "cloudwatch")
    now = datetime.now(UTC)
    total = 0.0
    for found in cloudwatch.list_metrics(Namespace="GpuPilot", MetricName=name)["Metrics"]:
        points = cloudwatch.get_metric_statistics(
            Namespace="GpuPilot", MetricName=name, Dimensions=found.get("Dimensions", []),
            StartTime=now - timedelta(hours=1), EndTime=now + timedelta(minutes=5), Period=3600, Statistics=["Sum"],
        )["Datapoints"]  # fmt: skip
        total += sum(point["Sum"] for point in points)
    return total


def list_all(api_url: str) -> list[dict[str, Any]]:
    jobs: list[dict[str, Any]] = []
    token: str | None = None
    for _ in range(100):
        query = "?limit=100" + (f"&next_token={token}" if token else "")
        status, page = http("GET", f"{api_url}/jobs{query}")
        if status != 200:
            time.sleep(0.3)
            continue
        jobs += page["jobs"]
        token = page.get("next_token")
        if not token:
            break
    return jobs
