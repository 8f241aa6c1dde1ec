"""World files shape the simulated AWS: failing jobs, GPU types without capacity, long jobs."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest

from tests.e2e.conftest import PATIENCE_SECONDS, RunningCloud

pytestmark = pytest.mark.e2e
JOB = {"name": "world", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"]}


def test_a_job_whose_container_fails_ends_failed_with_the_reason_and_its_cost(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    cloud = cloud_factory({"jobs": {"runtime_seconds": 1, "exit_code": 3}})
    job = cloud.wait_for(cloud.api.request("POST", "/jobs", JOB).body["job_id"], {"SUCCEEDED", "FAILED"})
    assert job["status"] == "FAILED"
    assert job["attempts"][0]["status"] == "FAILED"
    # The container's exit code, as Batch's DescribeJobs reports it, on the attempt and in the error
    assert [attempt["exit_code"] for attempt in job["attempts"]] == [3]
    assert "exited with 3" in job["error"], job["error"]
    assert job["timeline"][-1]["reason"] == job["error"]
    assert job["cost"]["runtime_seconds"] == pytest.approx(1.0, abs=0.01)


def test_a_job_that_succeeds_records_its_exit_code_0(cloud_factory: Callable[..., RunningCloud]) -> None:
    cloud = cloud_factory({"jobs": {"runtime_seconds": 1}})
    job = cloud.wait_for(cloud.api.request("POST", "/jobs", JOB).body["job_id"], {"SUCCEEDED", "FAILED"})
    assert job["status"] == "SUCCEEDED" and [attempt["exit_code"] for attempt in job["attempts"]] == [0]


def test_a_gpu_type_without_capacity_is_diagnosed_and_the_job_falls_back(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given the cheapest fitting GPU type has no capacity anywhere
    cloud = cloud_factory({"instance_types": {"g4dn.xlarge": {"capacity": "none"}}, "jobs": {"runtime_seconds": 1}})
    # When a job that may wait only 3 seconds is submitted
    body = JOB | {"stuck_after_minutes": 0.05}
    job = cloud.wait_for(cloud.api.request("POST", "/jobs", body).body["job_id"], {"SUCCEEDED", "FAILED"})
    first, second = job["attempts"][0], job["attempts"][1]
    # Then the first attempt is explained with Batch's own words and the job runs on the next type
    assert job["status"] == "SUCCEEDED", job
    assert first["instance_type"] == "g4dn.xlarge"
    assert first["diagnosis"]["category"] == "INSUFFICIENT_CAPACITY"
    assert "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY" in first["diagnosis"]["reason"]
    assert first["status"] == "FAILED"
    assert second["instance_type"] != "g4dn.xlarge" and job["instance_type"] == second["instance_type"]
    # And the timeline says why at each step: Batch's words while RUNNABLE, the fallback and its cause
    reasons = [(entry["status"], entry["reason"] or "") for entry in job["timeline"]]
    runnable = [reason for status, reason in reasons if status == "RUNNABLE"]
    provisioning = [reason for status, reason in reasons if status == "PROVISIONING"]
    assert "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY" in runnable[0], reasons
    assert provisioning[0].startswith("first choice: g4dn.xlarge on-demand"), reasons
    assert provisioning[1].startswith("falling back from g4dn.xlarge on-demand (INSUFFICIENT_CAPACITY) to "), reasons
    assert reasons[-1] == ("SUCCEEDED", "exited with 0")


def test_a_ten_hour_job_costs_ten_hours_without_waiting_ten_hours(cloud_factory: Callable[..., RunningCloud]) -> None:
    cloud = cloud_factory({"jobs": {"runtime_seconds": 36000}}, speedup=36000)
    job = cloud.wait_for(cloud.api.request("POST", "/jobs", JOB).body["job_id"], {"SUCCEEDED", "FAILED"})
    assert job["status"] == "SUCCEEDED"
    assert job["cost"]["runtime_seconds"] == pytest.approx(36000)
    assert job["cost"]["usd"] == pytest.approx(job["cost"]["hourly_usd"] * 10, rel=1e-4)


def test_a_bad_world_file_is_refused_with_one_line(tmp_path_factory: pytest.TempPathFactory) -> None:
    import subprocess

    from tests.e2e.conftest import GPUPILOT

    world = tmp_path_factory.mktemp("world") / "world.json"
    world.write_text('{"jobs": {"runtime_seconds": -1}}')
    command = [GPUPILOT, "serve", "--world", str(world)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=PATIENCE_SECONDS)
    assert result.returncode == 2
    assert "jobs.runtime_seconds" in result.stderr and result.stderr.count("\n") == 1


def test_cancelling_a_running_job_stops_its_workflow_and_its_batch_job(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    import boto3

    # Given a long job that is RUNNING
    cloud = cloud_factory({"jobs": {"runtime_seconds": 600}})
    job_id = cloud.api.request("POST", "/jobs", JOB).body["job_id"]
    running = cloud.wait_for(job_id, {"RUNNING", "FAILED"})
    # When it is cancelled
    response = cloud.api.request("DELETE", f"/jobs/{job_id}")
    again = cloud.api.request("DELETE", f"/jobs/{job_id}")
    # Then the job is CANCELLED, its execution aborted and its Batch job terminated
    session = boto3.session.Session(region_name="us-east-1")
    sfn = session.client("stepfunctions", endpoint_url=cloud.aws_url)
    batch = session.client("batch", endpoint_url=cloud.aws_url)
    batch_job_id = running["attempts"][0]["batch_job_id"]
    # (DescribeExecution and DescribeJobs are eventually consistent: read until they agree or 10 s pass)
    deadline = time.monotonic() + 10
    while True:
        execution = sfn.describe_execution(executionArn=running["execution_arn"])
        batch_job = batch.describe_jobs(jobs=[batch_job_id])["jobs"][0]
        if (execution["status"], batch_job["status"]) == ("ABORTED", "FAILED") or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert running["status"] == "RUNNING"
    assert response.status == 202 and response.body["status"] == "CANCELLED"
    assert again.status == 409
    assert execution["status"] == "ABORTED"
    assert batch_job["status"] == "FAILED"
    assert batch_job["statusReason"] == "cancelled by request"
    assert cloud.api.request("GET", f"/jobs/{job_id}").body["status"] == "CANCELLED"


def test_an_invalid_compute_environment_is_diagnosed_and_the_job_falls_back(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given the cheapest type's pool goes INVALID (say, an instance profile an earlier deployment deleted)
    reason = "CLIENT_ERROR - The specified instance profile gpupilot-gpu-instance does not exist"
    cloud = cloud_factory({"instance_types": {"g4dn.xlarge": {"compute_environment_invalid": reason}}})
    # When a job is submitted
    job = cloud.wait_for(cloud.api.request("POST", "/jobs", JOB).body["job_id"], {"SUCCEEDED", "FAILED"})
    first, second = job["attempts"][0], job["attempts"][1]
    # Then the first attempt says why with Batch's statusReason, nothing was submitted to it, and the next type ran
    assert job["status"] == "SUCCEEDED", job
    assert (first["instance_type"], first["status"], first["batch_job_id"]) == ("g4dn.xlarge", "NOT_SUBMITTED", "")
    assert first["diagnosis"]["category"] == "COMPUTE_ENVIRONMENT_INVALID"
    assert first["diagnosis"]["evidence"]["compute_environment_reason"] == reason
    assert second["instance_type"] != "g4dn.xlarge" and second["status"] == "SUCCEEDED"
    # And the next sweep reports the INVALID pool
    swept = cloud.cli("--json", "sweep")
    report = json.loads(swept.stdout)
    assert report["summary"]["COMPUTE_ENVIRONMENT_INVALID"] == 1
    # naming the pool, as every finding does, with its compute environment's ARN in the evidence
    [invalid] = [f for f in report["findings"] if f["kind"] == "COMPUTE_ENVIRONMENT_INVALID"]
    assert invalid["resource"].startswith("gpupilot-od-x8664-g4dn-xlarge-")
    assert invalid["evidence"]["compute_environment_arn"].endswith(f":compute-environment/{invalid['resource']}")


def test_secrets_reach_batch_as_references_with_the_execution_role(cloud_factory: Callable[..., RunningCloud]) -> None:
    import boto3

    # Given a job that references a secret under the deployment's prefix
    secret = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gpupilot/hf-token-AbCdEf"
    cloud = cloud_factory()
    job = cloud.wait_for(
        cloud.api.request("POST", "/jobs", JOB | {"secrets": {"HF_TOKEN": secret}}).body["job_id"],
        {"SUCCEEDED", "FAILED"},
    )
    # Then its Batch job definition carries the reference and the execution role, and no value anywhere
    batch = boto3.session.Session(region_name="us-east-1").client("batch", endpoint_url=cloud.aws_url)
    [batch_job] = batch.describe_jobs(jobs=[job["attempts"][0]["batch_job_id"]])["jobs"]
    [definition] = batch.describe_job_definitions(jobDefinitions=[batch_job["jobDefinition"]])["jobDefinitions"]
    container = definition["containerProperties"]
    assert job["status"] == "SUCCEEDED"
    assert container["secrets"] == [{"name": "HF_TOKEN", "valueFrom": secret}]
    assert ":role/gpupilot-BatchFleetJobExecutionRole" in container["executionRoleArn"]
    assert "HF_TOKEN" not in {e["name"] for e in container["environment"]}
