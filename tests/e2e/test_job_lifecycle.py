"""A CUDA job end to end through the local cloud's HTTP API, the CLI and the embedded AWS."""

from __future__ import annotations

import json
import time

import boto3
import pytest

from functions.shared.adapters.prices import SnapshotPrices
from tests.e2e.conftest import RunningCloud

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("e2e-default-world")]
MINIMAL = {"name": "smoke", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"]}


def test_a_minimal_job_runs_to_success_with_its_gpu_timeline_and_cost(cloud: RunningCloud) -> None:
    # Given the local cloud, when a minimal job is posted
    response = cloud.api.request("POST", "/jobs", MINIMAL)
    assert response.status == 202
    job = cloud.wait_for(response.body["job_id"], {"SUCCEEDED", "FAILED"})
    # Then it succeeded on an NVIDIA GPU type, with one attempt, an ordered timeline through RUNNING, and its cost
    statuses = [entry["status"] for entry in job["timeline"]]
    times = [entry["at"] for entry in job["timeline"]]
    attempt = job["attempts"][0]
    cost = job["cost"]
    quote = SnapshotPrices().on_demand(job["instance_type"])
    assert job["status"] == "SUCCEEDED", job
    assert job["gpu_model"] in {"T4", "L4", "A10G"}
    assert attempt["instance_type"] == job["instance_type"] and attempt["status"] == "SUCCEEDED"
    assert attempt["job_queue"].startswith("gpupilot-od-")
    assert statuses[:4] == ["SUBMITTED", "SELECTING", "PROVISIONING", "RUNNABLE"]
    assert "RUNNING" in statuses and statuses[-1] == "SUCCEEDED"
    assert times == sorted(times)
    assert quote is not None and cost["hourly_usd"] == quote.hourly_usd
    assert cost["runtime_seconds"] == pytest.approx(2.0, abs=0.01)
    assert cost["usd"] == pytest.approx(
        cost["hourly_usd"] * cost["runtime_seconds"] / 3600 * cost["gpu_share"], rel=1e-4
    )


def test_the_embedded_aws_shows_the_stack_and_the_job_in_batch(cloud: RunningCloud) -> None:
    job_id = cloud.api.request("POST", "/jobs", MINIMAL | {"name": "inspect"}).body["job_id"]
    job = cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"})
    session = boto3.session.Session(region_name="us-east-1")
    sfn = session.client("stepfunctions", endpoint_url=cloud.aws_url)
    batch = session.client("batch", endpoint_url=cloud.aws_url)
    machines = [m["name"] for m in sfn.list_state_machines()["stateMachines"]]
    # The job reads SUCCEEDED once Batch ended its attempt and it is priced; its workflow records that a state or two
    # later (RecordCost, JobSucceeded)
    deadline = time.monotonic() + 60
    while (execution := sfn.describe_execution(executionArn=job["execution_arn"]))["status"] == "RUNNING":
        assert time.monotonic() < deadline, "the job's workflow did not end within 60 s of the job"
        time.sleep(0.2)
    batch_job = batch.describe_jobs(jobs=[job["attempts"][0]["batch_job_id"]])["jobs"][0]
    history = sfn.get_execution_history(executionArn=job["execution_arn"], maxResults=1000)["events"]
    entered = [e["stateEnteredEventDetails"]["name"] for e in history if "stateEnteredEventDetails" in e]
    cloudwatch = session.client("cloudwatch", endpoint_url=cloud.aws_url)
    metrics = {m["MetricName"] for m in cloudwatch.list_metrics(Namespace="GpuPilot")["Metrics"]}
    assert machines == ["GpuJob"]
    assert execution["status"] == "SUCCEEDED"
    assert batch_job["status"] == "SUCCEEDED"
    assert {"JobCostUsd", "JobsSucceeded", "JobRuntimeSeconds"} <= metrics
    # A new pool is polled until Batch reports it VALID (WaitForJobQueue); a reused one is ready at once
    polls = entered.count("WaitForJobQueue")
    assert entered == [
        "SelectGpuType", *["EnsureJobQueue", "IsJobQueueReady", "WaitForJobQueue"] * polls,
        "EnsureJobQueue", "IsJobQueueReady", "SubmitBatchJob",
        "WaitForJobToStart", "DidJobStart", "WaitForJobToFinish", "WasSpotReclaimed", "RecordCost", "DidJobSucceed",
        "JobSucceeded",
    ]  # fmt: skip


def test_the_cli_submits_waits_and_prints_the_cost(cloud: RunningCloud) -> None:
    result = cloud.cli("submit", "--name", "cli-job", "--image", "nvidia/cuda:12.4.1-base-ubuntu22.04", "--wait",
                       "--", "nvidia-smi", "-L")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "SUCCEEDED" in result.stdout
    assert "cost" in result.stdout and "$" in result.stdout


def test_the_cli_lists_and_shows_jobs_as_json(cloud: RunningCloud) -> None:
    submitted = json.loads(cloud.cli("--json", "submit", "--name", "listed", "--image", "img", "--", "true").stdout)
    listed = json.loads(cloud.cli("--json", "list", "--limit", "50").stdout)
    shown = json.loads(cloud.cli("--json", "status", submitted["job_id"]).stdout)
    assert submitted["job_id"] in {job["job_id"] for job in listed["jobs"]}
    assert shown["name"] == "listed"


def test_bad_cli_input_exits_2_with_one_line(cloud: RunningCloud) -> None:
    result = cloud.cli("submit", "--name", "bad", "--image", "img", "--gpus", "12", "--", "true")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1
    assert "gpus" in result.stderr


def test_an_unknown_job_is_a_404_and_a_cli_exit_3(cloud: RunningCloud) -> None:
    response = cloud.api.request("GET", "/jobs/nosuchjob")
    result = cloud.cli("status", "nosuchjob")
    assert response.status == 404 and response.body["field"] == "job_id"
    assert result.returncode == 3 and result.stderr.count("\n") == 1


def test_plan_through_the_cli_launches_nothing(cloud: RunningCloud) -> None:
    before = cloud.api.request("GET", "/jobs", query={"limit": 100}).body["jobs"]
    result = cloud.cli("--json", "plan", "--name", "p", "--image", "img", "--gpu-model", "L4", "--", "true")
    after = cloud.api.request("GET", "/jobs", query={"limit": 100}).body["jobs"]
    plan = json.loads(result.stdout)
    assert plan["candidates"] and {c["gpu_model"] for c in plan["candidates"]} == {"L4"}
    assert len(after) == len(before)


def test_the_cli_retrying_with_the_same_idempotency_key_gets_the_same_job(cloud: RunningCloud) -> None:
    args = ("--json", "submit", "--name", "retried", "--image", "img", "--idempotency-key", "nightly-42", "--", "true")
    first = json.loads(cloud.cli(*args).stdout)
    second = json.loads(cloud.cli(*args).stdout)
    assert second["job_id"] == first["job_id"]


def test_the_cuda_smoke_test_runs_as_a_job_through_the_cli(cloud: RunningCloud) -> None:
    # When a user asks for the smoke test / Then it is a job like any other, carrying the payload itself
    done = cloud.cli("--json", "submit", "--smoke", "--wait")
    assert done.returncode == 0, done.stderr
    job = json.loads(done.stdout)
    assert (job["status"], job["name"], job["request"]["image"]) == ("SUCCEEDED", "cuda-smoke", "python:3.12-slim")
    assert job["request"]["command"][:2] == ["python3", "-c"]
