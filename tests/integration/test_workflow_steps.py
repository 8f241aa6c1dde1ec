"""Each workflow step's handler against moto: real Batch, DynamoDB and EC2 calls."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from functions.diagnose.handler import handler as diagnose_handler
from functions.ensure_queue.handler import handler as ensure_queue_handler
from functions.job_events.handler import handler as job_events_handler
from functions.record_cost.handler import handler as record_cost_handler
from functions.select_gpu.handler import handler as select_gpu_handler
from functions.shared import service
from functions.shared.store import JobStore
from functions.shared.workflow import WaitInput
from functions.submit_job.handler import handler as submit_job_handler
from gpupilot.localcloud.deploy import Deployment

REQUEST = {"name": "train", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi"]}


@pytest.fixture
def job(deployment: Deployment) -> str:
    JobStore(boto3.client("dynamodb"), deployment.table_name).create_job("job00000001", "train", REQUEST)
    return "job00000001"


def _select(job: str, context: Any, request: dict[str, Any] | None = None) -> dict[str, Any]:
    return dict(select_gpu_handler({"job_id": job, "request": request or REQUEST}, context))


def _provisioned(job: str, context: Any) -> dict[str, Any]:
    selection = _select(job, context)
    queue = ensure_queue_handler({"job_id": job, "request": REQUEST, "selection": selection}, context)
    return {"job_id": job, "request": REQUEST, "selection": selection, "queue": queue}


def _submitted(job: str, context: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(workflow state, SubmitBatchJob's output) of a job provisioned and submitted on its first candidate."""
    state = _provisioned(job, context)
    return state, submit_job_handler(state, context)


def _moto_job(batch_job_id: str, status: str) -> Any:
    """Set a job's status behind Batch's back (as if Batch moved it and no event was seen yet)."""
    from moto.batch.models import batch_backends

    moto_job = batch_backends["123456789012"]["us-east-1"]._jobs[batch_job_id]
    moto_job.status = status
    moto_job.job_stopped = False
    return moto_job


def _batch_event(batch_job_id: str, **detail: Any) -> dict[str, Any]:
    described = boto3.client("batch").describe_jobs(jobs=[batch_job_id])["jobs"][0]
    return {
        "detail-type": "Batch Job State Change",
        "source": "aws.batch",
        "time": "2026-11-22T10:00:00Z",
        "detail": described | detail,
    }


def test_selection_ranks_the_cheapest_offered_nvidia_type_first(job: str, context: Any) -> None:
    selection = _select(job, context)
    first = selection["candidates"][0]
    prices = [c["hourly_usd"] for c in selection["candidates"]]
    assert first["instance_type"] == "g4dn.xlarge"
    assert prices == sorted(prices)
    assert selection["catalog"] == "live"
    assert set(first["zones"]) == {"us-east-1a", "us-east-1b"}


def test_selection_skips_offerings_remembered_as_unavailable(deployment: Deployment, job: str, context: Any) -> None:
    store = JobStore(boto3.client("dynamodb"), deployment.table_name)
    for zone in ("us-east-1a", "us-east-1b"):
        store.remember_unavailable(f"on-demand:g4dn.xlarge:{zone}", "INSUFFICIENT_CAPACITY", 600)
    selection = _select(job, context)
    assert selection["candidates"][0]["instance_type"] != "g4dn.xlarge"


def test_selection_with_no_fitting_gpu_type_fails_with_the_reasons(job: str, context: Any) -> None:
    with pytest.raises(service.NoGpuTypeAvailable, match="instance_types"):
        _select(job, context, REQUEST | {"instance_types": ["m5.large"]})


def test_when_nothing_fits_the_reason_of_the_allowed_type_comes_first(
    deployment: Deployment, job: str, context: Any
) -> None:
    # Given the only allowed type is remembered as unavailable in every zone
    store = JobStore(boto3.client("dynamodb"), deployment.table_name)
    for zone in ("us-east-1a", "us-east-1b"):
        store.remember_unavailable(f"on-demand:g4dn.xlarge:{zone}", "INSUFFICIENT_CAPACITY", 600)
    # When selecting, then the error starts with that type's own reason
    with pytest.raises(service.NoGpuTypeAvailable, match=r"\(g4dn\.xlarge: on-demand capacity recently unavailable"):
        _select(job, context, REQUEST | {"instance_types": ["g4dn.xlarge"]})


def test_ensure_queue_creates_a_gpu_pool_and_then_reuses_it(job: str, context: Any) -> None:
    # Given a first job provisioned its pool
    state = _provisioned(job, context)
    batch = boto3.client("batch")
    # When a second call for the same GPU type comes
    again = ensure_queue_handler(
        {"job_id": job, "request": REQUEST, "selection": state["selection"], "previous": state["queue"]}, context
    )
    # Then the same pool is reused, and it is a GPU pool that scales from zero
    environments = batch.describe_compute_environments()["computeEnvironments"]
    assert again["job_queue"] == state["queue"]["job_queue"]
    assert len(environments) == 1
    resources = environments[0]["computeResources"]
    assert resources["minvCpus"] == 0
    assert resources["instanceTypes"] == ["g4dn.xlarge"]
    assert resources["ec2Configuration"] == [{"imageType": "ECS_AL2023_NVIDIA"}]
    assert resources["launchTemplate"]["launchTemplateName"] == "gpupilot-gpu"
    assert state["queue"]["ready"] is True


def test_submit_registers_gpu_requirements_and_a_retry_submits_nothing_new(job: str, context: Any) -> None:
    state = _provisioned(job, context)
    first = submit_job_handler(state, context)
    second = submit_job_handler(state, context)
    batch = boto3.client("batch")
    definition = batch.describe_job_definitions(jobDefinitions=[first["job_definition"]])["jobDefinitions"][0]
    requirements = {r["type"]: r["value"] for r in definition["containerProperties"]["resourceRequirements"]}
    environment = {e["name"]: e["value"] for e in definition["containerProperties"]["environment"]}
    assert second["batch_job_id"] == first["batch_job_id"]
    assert len(batch.list_jobs(jobQueue=first["job_queue"], jobStatus="SUCCEEDED")["jobSummaryList"]) <= 1
    assert requirements["GPU"] == "1"
    assert environment["NVIDIA_DRIVER_CAPABILITIES"] == "compute,utility"
    assert definition["timeout"]["attemptDurationSeconds"] == 3600


def test_batch_events_build_the_timeline_and_ignore_foreign_jobs(
    deployment: Deployment, job: str, context: Any
) -> None:
    _state, submitted = _submitted(job, context)
    # When Batch reports RUNNING for our job and something for a job that is not ours
    job_events_handler(_batch_event(submitted["batch_job_id"], status="RUNNING", startedAt=1_800_000_000_000), context)
    foreign = job_events_handler(
        _batch_event(submitted["batch_job_id"], jobName="someone-elses-job", status="FAILED"), context
    )
    record = JobStore(boto3.client("dynamodb"), deployment.table_name).get_job(job)
    # Then our job is RUNNING with a timeline through RUNNING, and the foreign event changed nothing
    assert foreign == {"ignored": "not a GPU Pilot job"}
    assert record["status"] == "RUNNING"
    assert [e["status"] for e in record["timeline"]] == [
        "SUBMITTED", "SELECTING", "PROVISIONING", "RUNNABLE", "RUNNING"
    ]  # fmt: skip


def test_malformed_batch_events_are_ignored_not_crashed_on(job: str, context: Any) -> None:
    assert job_events_handler({"detail-type": "Batch Job State Change", "detail": {}}, context)["ignored"]
    assert job_events_handler({"detail-type": "Batch Job Queue Blocked", "detail": {}}, context)["ignored"]


def test_record_cost_prices_the_attempt_and_emits_the_cost_metric(
    deployment: Deployment, job: str, context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a job that ran 30 minutes on a g4dn.xlarge
    _state, submitted = _submitted(job, context)
    finished = {"status": "SUCCEEDED", "exit_code": 0, "started_at": 1_800_000_000_000, "stopped_at": 1_800_001_800_000}
    capsys.readouterr()
    # When its cost is recorded
    cost = record_cost_handler({"job_id": job, "batch_job": submitted, "finished": finished}, context)
    # Then cost = hourly x runtime x share, the job SUCCEEDED with it, and an EMF metric carries it
    record = JobStore(boto3.client("dynamodb"), deployment.table_name).get_job(job)
    emf = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert cost["usd"] == pytest.approx(0.526 * 0.5)
    assert record["status"] == "SUCCEEDED"
    assert record["cost"]["usd"] == pytest.approx(0.263)
    assert emf and emf[0]["JobCostUsd"] == [pytest.approx(0.263)]
    assert emf[0]["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "GpuPilot"


def test_a_capacity_stuck_job_is_diagnosed_cancelled_and_falls_back(
    deployment: Deployment, job: str, context: Any
) -> None:
    # Given an attempt Batch keeps RUNNABLE for lack of capacity
    state, submitted = _submitted(job, context)
    moto_job = _moto_job(submitted["batch_job_id"], "RUNNABLE")
    moto_job.job_stopped_reason = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - no g4dn.xlarge"
    # When the stuck job is diagnosed
    result = diagnose_handler(state | {"batch_job": submitted, "previous": {"checks": 0}}, context)
    # Then the cause is capacity, with evidence, the workflow falls back, and the offering is remembered
    store = JobStore(boto3.client("dynamodb"), deployment.table_name)
    assert result["category"] == "INSUFFICIENT_CAPACITY"
    assert result["evidence"]["batch_job_id"] == submitted["batch_job_id"]
    assert result["action"] == "fall_back" and result["next_index"] == 1
    assert "on-demand:g4dn.xlarge:us-east-1a" in store.unavailable_offerings()
    assert store.get_job(job)["attempts"]["1"]["diagnosis"]["category"] == "INSUFFICIENT_CAPACITY"


def test_a_missed_batch_event_is_replayed_by_the_sweep_and_resumes_the_workflow(
    deployment: Deployment, job: str, context: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a workflow parked waiting for its job to start
    _state, submitted = _submitted(job, context)
    sent: list[str] = []

    class StepFunctions:
        def send_task_success(self, taskToken: str, output: str) -> None:
            sent.append(taskToken)

    real_client = service.client
    monkeypatch.setattr(
        service, "client", lambda name: StepFunctions() if name == "stepfunctions" else real_client(name)
    )
    service.park_wait(
        WaitInput(
            job_id=job, phase="start", attempt=1, batch_job_id=submitted["batch_job_id"], task_token="token-start"
        )
    )
    # And Batch started the job but its event never arrived
    _moto_job(submitted["batch_job_id"], "RUNNING")
    # When the health sweep runs
    report = service.run_sweep()
    # Then it replays the change: the job is RUNNING and the workflow resumed
    record = JobStore(boto3.client("dynamodb"), deployment.table_name).get_job(job)
    assert report.summary["reconciled_events"] == 1
    assert record["status"] == "RUNNING"
    assert sent == ["token-start"]


def test_a_retried_submit_finds_the_batch_job_its_first_try_submitted(
    deployment: Deployment, job: str, context: Any
) -> None:
    # Given Batch accepted attempt 1 but the record never learned its id (the Lambda died after submit)
    state = _provisioned(job, context)
    store = JobStore(boto3.client("dynamodb"), deployment.table_name)
    candidate = state["selection"]["candidates"][0]
    store.put_attempt(job, 1, {"instance_type": candidate["instance_type"], "job_queue": state["queue"]["job_queue"]})
    batch = boto3.client("batch")
    definition = batch.register_job_definition(
        jobDefinitionName="gpupilot-train",
        type="container",
        containerProperties={"image": "img", "command": ["true"], "vcpus": 1, "memory": 512},
    )
    first = batch.submit_job(
        jobName=f"gpupilot-{job}-a1", jobQueue=state["queue"]["job_queue"], jobDefinition=definition["jobDefinitionArn"]
    )
    # When SubmitBatchJob is retried
    submitted = submit_job_handler(state, context)
    # Then it adopts that Batch job instead of submitting a second one
    assert submitted["batch_job_id"] == first["jobId"]
    assert store.get_job(job)["attempts"]["1"]["batch_job_id"] == first["jobId"]


def test_record_failure_terminates_attempts_the_workflow_state_does_not_know(
    deployment: Deployment, job: str, context: Any
) -> None:
    from functions.record_failure.handler import handler as record_failure_handler

    # Given a submitted attempt, and a failure caught before $.batch_job was set
    _state, submitted = _submitted(job, context)
    moto_job = _moto_job(submitted["batch_job_id"], "RUNNING")
    error = {"Error": "States.TaskFailed", "Cause": "boom"}
    # When the failure is recorded
    result = record_failure_handler({"job_id": job, "state": {"job_id": job, "error": error}}, context)
    # Then the job is FAILED with the cause and its Batch job was terminated
    record = JobStore(boto3.client("dynamodb"), deployment.table_name).get_job(job)
    assert result["recorded"] is True
    assert record["status"] == "FAILED" and record["error"] == "States.TaskFailed: boom"
    assert moto_job.stop is True and moto_job.job_stopped_reason == "GPU Pilot workflow failed"


def test_a_job_that_started_as_its_wait_timed_out_goes_back_to_waiting(job: str, context: Any) -> None:
    state, submitted = _submitted(job, context)
    _moto_job(submitted["batch_job_id"], "RUNNING")
    result = diagnose_handler(state | {"batch_job": submitted, "previous": {"checks": 2}}, context)
    record = JobStore(boto3.client("dynamodb"), service.settings().table_name).get_job(job)
    # Then it waits again without spending a check, and the record knows it runs, so the wait resumes at once
    assert result["action"] == "keep_waiting"
    assert result["checks"] == 2
    assert record["attempts"]["1"]["batch_status"] == "RUNNING"
    assert record["status"] == "RUNNING"


def test_a_retried_fallback_diagnosis_repeats_its_answer(deployment: Deployment, job: str, context: Any) -> None:
    # Given a diagnosis that fell back and cancelled the Batch job
    state, submitted = _submitted(job, context)
    moto_job = _moto_job(submitted["batch_job_id"], "RUNNABLE")
    moto_job.job_stopped_reason = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - no g4dn.xlarge"
    event = state | {"batch_job": submitted, "previous": {"checks": 0}}
    first = diagnose_handler(event, context)
    moto_job.status = "FAILED"
    # When Step Functions retries it (the job is now FAILED by our own cancel)
    again = diagnose_handler(event, context)
    # Then it falls back again to the same next GPU type, instead of waiting on a dead job
    assert first["action"] == again["action"] == "fall_back"
    assert again["next_index"] == first["next_index"] == 1


def test_events_of_jobs_another_deployment_owns_are_ignored(job: str, context: Any) -> None:
    event = {
        "detail-type": "Batch Job State Change",
        "time": "2026-11-22T10:00:00Z",
        "detail": {"jobName": "gpupilot-0123456789abcdef0123-a1", "jobId": "x", "status": "RUNNING"},
    }
    assert job_events_handler(event, context)["ignored"] == "not a job of this deployment"


def test_an_event_gives_an_attempt_its_batch_job_id_when_the_submit_could_not(
    deployment: Deployment, job: str, context: Any
) -> None:
    # Given an attempt whose submit reached Batch but never wrote the id down
    store = JobStore(boto3.client("dynamodb"), deployment.table_name)
    store.put_attempt(job, 1, {"instance_type": "g4dn.xlarge", "job_queue": "q"})
    event = {
        "detail-type": "Batch Job State Change",
        "time": "2026-11-22T10:00:00Z",
        "detail": {"jobName": f"gpupilot-{job}-a1", "jobId": "batch-123", "status": "RUNNABLE"},
    }
    # When its first event arrives, then the attempt knows its Batch job (and can be terminated)
    job_events_handler(event, context)
    assert store.get_job(job)["attempts"]["1"]["batch_job_id"] == "batch-123"


def test_a_retried_record_cost_does_not_count_the_cost_twice(
    job: str, context: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    _state, submitted = _submitted(job, context)
    finished = {"status": "SUCCEEDED", "exit_code": 0, "started_at": 0, "stopped_at": 60_000}
    capsys.readouterr()
    record_cost_handler({"job_id": job, "batch_job": submitted, "finished": finished}, context)
    record_cost_handler({"job_id": job, "batch_job": submitted, "finished": finished}, context)
    costs = [line for line in capsys.readouterr().out.splitlines() if '"JobCostUsd"' in line]
    assert len(costs) == 1
