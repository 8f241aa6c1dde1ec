"""Each workflow step's handler against moto: real Batch, DynamoDB, EC2 and Step Functions calls, each
function run with the environment the synthesized template gives it."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import boto3
import pytest

from functions.shared.adapters.batch import LIST_JOBS_PAGE
from functions.shared.adapters.job_store import DynamoJobStore
from functions.shared.adapters.table_store import DynamoOfferingMemory
from functions.shared.domain.capacity.unavailable import remembered
from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.core.vocabulary import CapacityType, DiagnosisCategory, JobStatus, WaitPhase
from functions.shared.domain.jobs.records import AttemptRecord, Wait
from functions.shared.domain.requests.job_request import JobRequest
from gpupilot.localcloud.gateway_event import proxy_event
from tests.integration.conftest import DELETE_SECONDS, ZONES, Cloud, HandlerError

JOB = "job00000001"
REQUEST = {"name": "train", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi"]}
CAPACITY = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Service cannot fulfill the capacity requested"


@pytest.fixture
def store(cloud: Cloud) -> DynamoJobStore:
    jobs = DynamoJobStore(cloud.deployment.table_name)
    jobs.create_job(JOB, JobRequest.model_validate(REQUEST))
    return jobs


def select(cloud: Cloud, request: dict[str, Any] | None = None) -> dict[str, Any]:
    return dict(cloud.invoke("select_gpu", {"job_id": JOB, "request": request or REQUEST}))


def provisioned(cloud: Cloud) -> dict[str, Any]:
    """The workflow state once the first candidate's pool is ready (the local clock moved past CREATING)."""
    state = {"job_id": JOB, "request": REQUEST, "selection": select(cloud)}
    state["queue"] = cloud.invoke("ensure_queue", state)
    cloud.clock.advance()
    state["queue"] = cloud.invoke("ensure_queue", state | {"previous": state["queue"]})
    assert state["queue"]["ready"] is True
    return state


def submitted(cloud: Cloud) -> tuple[dict[str, Any], dict[str, Any]]:
    state = provisioned(cloud)
    return state, cloud.invoke("submit_job", state)


def spot_submitted(cloud: Cloud) -> dict[str, Any]:
    """A spot g5.xlarge attempt submitted to Batch (its pool made ready on the local clock)."""
    spot = REQUEST | {"capacity": "spot", "instance_types": ["g5.xlarge"]}
    state = {"job_id": JOB, "request": spot, "selection": select(cloud, spot)}
    state["queue"] = cloud.invoke("ensure_queue", state)
    cloud.clock.advance()
    state["queue"] = cloud.invoke("ensure_queue", state | {"previous": state["queue"]})
    return dict(cloud.invoke("submit_job", state))


def moto_job(batch_job_id: str, status: str, reason: str | None = None) -> Any:
    """Set a job's status behind Batch's back (as if Batch moved it and no event was seen yet)."""
    from moto.batch.models import batch_backends

    job = batch_backends["123456789012"]["us-east-1"]._jobs[batch_job_id]
    job.status = status
    job.job_stopped = False
    job.job_stopped_reason = reason
    return job


def batch_event(batch_job_id: str, **detail: Any) -> dict[str, Any]:
    described = boto3.client("batch").describe_jobs(jobs=[batch_job_id])["jobs"][0]
    return {"detail-type": "Batch Job State Change", "source": "aws.batch", "time": "2026-11-22T10:00:00Z",
            "detail": described | detail}  # fmt: skip


# -- SelectGpuType ---------------------------------------------------------------------------------
def test_selection_ranks_the_cheapest_nvidia_type_offered_in_the_deployments_zones(cloud: Cloud, store: Any) -> None:
    selection = select(cloud)
    first = selection["candidates"][0]
    families = [c["instance_type"].split(".")[0] for c in selection["candidates"]]
    assert first["instance_type"] == "g4dn.xlarge"
    assert first["pricing"].startswith("on-demand us-east-1 AWS Price List of ")
    # Best first, then the next attempts from other families while there are any
    assert families[1] != families[0]
    assert selection["catalog"] == "live"
    assert set(first["zones"]) == {"us-east-1a", "us-east-1b"}


def test_selection_skips_offerings_remembered_as_unavailable(cloud: Cloud, store: Any) -> None:
    memory = DynamoOfferingMemory(cloud.deployment.table_name)
    for zone in ("us-east-1a", "us-east-1b"):
        memory.remember_unavailable(
            f"on-demand:us-east-1:g4dn.xlarge:{zone}",
            remembered(DiagnosisCategory.INSUFFICIENT_CAPACITY, "AWS Batch said CAPACITY", now_iso(), 600),
        )
    assert select(cloud)["candidates"][0]["instance_type"] != "g4dn.xlarge"


def test_selection_with_no_fitting_gpu_type_fails_with_the_reasons(cloud: Cloud, store: Any) -> None:
    with pytest.raises(HandlerError, match="instance_types") as failed:
        select(cloud, REQUEST | {"instance_types": ["m5.large"]})
    assert failed.value.error_type == "NoGpuTypeAvailable"


# -- EnsureJobQueue ------------------------------------------------------------------------------------
def test_a_new_pool_gets_its_queue_only_once_its_compute_environment_is_valid(cloud: Cloud, store: Any) -> None:
    # Given a first job on a GPU type with no pool yet
    state = {"job_id": JOB, "request": REQUEST, "selection": select(cloud)}
    batch = boto3.client("batch")

    # When EnsureJobQueue runs while Batch is still creating the compute environment
    first = cloud.invoke("ensure_queue", state)
    # Then no queue was asked for (Batch would refuse it), and the workflow is told to wait
    assert (first["ready"], first["status"]) == (False, "CREATING/NOT_CREATED")
    assert batch.describe_job_queues()["jobQueues"] == []

    # When it runs again after the compute environment became VALID
    cloud.clock.advance()
    second = cloud.invoke("ensure_queue", state | {"previous": first})
    # Then the queue exists, ordered onto the pool's compute environment, and is reused by the next job
    environment = batch.describe_compute_environments()["computeEnvironments"][0]
    (queue,) = batch.describe_job_queues()["jobQueues"]
    assert (second["ready"], second["checks"]) == (True, 2)
    assert queue["computeEnvironmentOrder"][0]["computeEnvironment"] == environment["computeEnvironmentArn"]
    assert environment["computeResources"]["ec2Configuration"] == [{"imageType": "ECS_AL2023_NVIDIA"}]
    assert environment["computeResources"]["launchTemplate"]["launchTemplateName"] == "gpupilot-gpu"
    assert environment["serviceRole"].endswith("/aws-service-role/batch.amazonaws.com/AWSServiceRoleForbatch")
    assert cloud.invoke("ensure_queue", state)["ready"] is True
    assert len(batch.describe_compute_environments()["computeEnvironments"]) == 1


def test_an_invalid_pool_is_diagnosed_and_the_workflow_told_to_fall_back(cloud: Cloud, store: Any) -> None:
    # Given the first candidate's pool exists and Batch marked its compute environment INVALID
    reason = "CLIENT_ERROR - The instance profile gpupilot-gpu-instance does not exist"
    state = {"job_id": JOB, "request": REQUEST, "selection": select(cloud)}
    cloud.invoke("ensure_queue", state)
    cloud.clock.advance()
    cloud.lifecycle.invalid_reason = lambda _types: reason

    # When EnsureJobQueue runs
    status = cloud.invoke("ensure_queue", state)

    # Then the attempt is diagnosed with Batch's own words, and the workflow falls back to the next candidate
    attempt = store.get_job(JOB).attempts[1]
    assert (status["remedy"], status["next_index"]) == ("fall_back", 1)
    assert attempt.diagnosis.category == "COMPUTE_ENVIRONMENT_INVALID"
    assert attempt.diagnosis.evidence["compute_environment_reason"] == reason


def test_a_pool_batch_is_still_deleting_is_not_waited_on_the_job_gets_the_pool_s_next_generation(
    cloud: Cloud, store: Any
) -> None:
    # Given a pool that ran a job and was taken down in Batch's order: its queue deleted, then its compute
    # environment, which Batch still shows DELETING (its name taken)
    state = provisioned(cloud)
    pool = state["queue"]["compute_environment"]
    batch = boto3.client("batch")
    batch.update_job_queue(jobQueue=pool, state="DISABLED")
    batch.delete_job_queue(jobQueue=pool)
    cloud.clock.advance(DELETE_SECONDS)
    batch.update_compute_environment(computeEnvironment=pool, state="DISABLED")
    batch.delete_compute_environment(computeEnvironment=pool)

    # When a workflow needs the same pool
    payload = {"job_id": JOB, "request": REQUEST, "selection": state["selection"]}
    first = cloud.invoke("ensure_queue", payload)

    # Then it creates the pool's next generation at once, under a name Batch does not hold, and gets it ready
    assert (first["compute_environment"], first["status"]) == (f"{pool}-g2", "CREATING/NOT_CREATED")
    cloud.clock.advance()
    ready = cloud.invoke("ensure_queue", payload | {"previous": first})
    assert (ready["ready"], ready["job_queue"]) == (True, f"{pool}-g2")
    shown = batch.describe_compute_environments()["computeEnvironments"]
    assert {e["computeEnvironmentName"]: e["status"] for e in shown} == {pool: "DELETED", f"{pool}-g2": "VALID"}


# -- SubmitBatchJob ----------------------------------------------------------------------------------
def test_submit_registers_gpu_requirements_and_the_job_role_and_a_retry_submits_nothing_new(
    cloud: Cloud, store: Any
) -> None:
    state = provisioned(cloud)
    first = cloud.invoke("submit_job", state)
    second = cloud.invoke("submit_job", state)
    batch = boto3.client("batch")
    definition = batch.describe_job_definitions(jobDefinitions=[first["job_definition"]])["jobDefinitions"][0]
    container = definition["containerProperties"]
    requirements = {r["type"]: r["value"] for r in container["resourceRequirements"]}
    environment = {e["name"]: e["value"] for e in container["environment"]}
    assert second["batch_job_id"] == first["batch_job_id"]
    assert requirements["GPU"] == "1"
    assert environment["NVIDIA_DRIVER_CAPABILITIES"] == "compute,utility"
    assert container["command"] == ["nvidia-smi"]  # no preflight unless asked for
    assert container["jobRoleArn"] == cloud.deployment.environment("submit_job")["GPUPILOT_JOB_ROLE_ARN"]
    assert definition["timeout"]["attemptDurationSeconds"] == 3600


def test_a_checkpointing_job_is_submitted_with_its_directory_kept_in_the_deployments_hosts_bucket(
    cloud: Cloud, store: Any
) -> None:
    # Given a job that asks for checkpoints, its pool ready
    request = REQUEST | {"checkpoint": {"every_minutes": 15}}
    state = {"job_id": JOB, "request": request, "selection": select(cloud, request)}
    state["queue"] = cloud.invoke("ensure_queue", state)
    cloud.clock.advance()
    state["queue"] = cloud.invoke("ensure_queue", state | {"previous": state["queue"]})
    # When its attempt is submitted
    submitted = cloud.invoke("submit_job", state)
    # Then Batch got a definition whose directory is the host's and is kept in the bucket the stack made
    definition = boto3.client("batch").describe_job_definitions(jobDefinitions=[submitted["job_definition"]])
    container = definition["jobDefinitions"][0]["containerProperties"]
    environment = {e["name"]: e["value"] for e in container["environment"]}
    bucket = environment["GPUPILOT_CHECKPOINT_BUCKET"]
    assert bucket == cloud.deployment.environment("submit_job")["GPUPILOT_HOSTS_BUCKET"]
    assert boto3.client("s3").head_bucket(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert (environment["GPUPILOT_JOB_ID"], environment["GPUPILOT_ATTEMPT"]) == (JOB, "1")
    assert environment["GPUPILOT_CHECKPOINT_EVERY_SECONDS"] == "900"
    assert container["mountPoints"][0]["containerPath"] == environment["GPUPILOT_CHECKPOINT_DIR"]
    assert container["command"][:2] == ["sh", "-c"] and container["command"][-1] == "nvidia-smi"


def test_a_retried_submit_finds_the_batch_job_its_first_try_submitted(cloud: Cloud, store: Any) -> None:
    # Given Batch accepted attempt 1 but the record never learned its id (the Lambda died after submit)
    state = provisioned(cloud)
    candidate = state["selection"]["candidates"][0]
    store.put_attempt(JOB, 1, AttemptRecord(instance_type=candidate["instance_type"], capacity=CapacityType.ON_DEMAND,
                                            job_queue=state["queue"]["job_queue"]))  # fmt: skip
    batch = boto3.client("batch")
    definition = batch.register_job_definition(
        jobDefinitionName="gpupilot-train",
        type="container",
        containerProperties={"image": "img", "command": ["true"], "vcpus": 1, "memory": 512},
    )
    first = batch.submit_job(
        jobName=f"gpupilot-{JOB}-a1", jobQueue=state["queue"]["job_queue"], jobDefinition=definition["jobDefinitionArn"]
    )
    # When SubmitBatchJob is retried / Then it adopts that Batch job instead of submitting a second one
    assert cloud.invoke("submit_job", state)["batch_job_id"] == first["jobId"]
    assert store.get_job(JOB).attempts[1].batch_job_id == first["jobId"]


def test_a_retried_submit_finds_its_batch_job_past_the_first_page_of_the_name_listing(cloud: Cloud, store: Any) -> None:
    # Given Batch accepted attempt 1 after more than a page (100) of other jobs whose names match its name but for
    # case (ListJobs' JOB_NAME filter ignores case), and the record never learned the attempt's id
    state = provisioned(cloud)
    queue = state["queue"]["job_queue"]
    candidate = state["selection"]["candidates"][0]
    store.put_attempt(JOB, 1, AttemptRecord(instance_type=candidate["instance_type"], capacity=CapacityType.ON_DEMAND,
                                            job_queue=queue))  # fmt: skip
    batch = boto3.client("batch")
    definition = batch.register_job_definition(
        jobDefinitionName="gpupilot-train",
        type="container",
        containerProperties={"image": "img", "command": ["true"], "vcpus": 1, "memory": 512},
    )["jobDefinitionArn"]
    name = f"gpupilot-{JOB}-a1"
    for _ in range(LIST_JOBS_PAGE):
        batch.submit_job(jobName=name.upper(), jobQueue=queue, jobDefinition=definition)
    first = batch.submit_job(jobName=name, jobQueue=queue, jobDefinition=definition)

    def listed() -> list[int]:
        pages = batch.get_paginator("list_jobs").paginate(
            jobQueue=queue, filters=[{"name": "JOB_NAME", "values": [name]}]
        )
        return [len(page["jobSummaryList"]) for page in pages]

    assert listed() == [LIST_JOBS_PAGE, 1]

    # When SubmitBatchJob is retried / Then it adopts that very Batch job, and submits no other
    assert cloud.invoke("submit_job", state)["batch_job_id"] == first["jobId"]
    assert store.get_job(JOB).attempts[1].batch_job_id == first["jobId"]
    assert listed() == [LIST_JOBS_PAGE, 1]


# -- job_events -------------------------------------------------------------------------------------
def test_batch_events_build_the_timeline_and_ignore_foreign_jobs(cloud: Cloud, store: Any) -> None:
    _, batch_job = submitted(cloud)
    cloud.invoke("job_events", batch_event(batch_job["batch_job_id"], status="RUNNING", startedAt=1_800_000_000_000))
    foreign = cloud.invoke(
        "job_events", batch_event(batch_job["batch_job_id"], jobName="someone-else", status="FAILED")
    )
    record = store.get_job(JOB)
    assert foreign == {"ignored": "not a GPU Pilot job"}
    assert record.status == JobStatus.RUNNING
    assert [e.status for e in record.timeline] == ["SUBMITTED", "SELECTING", "PROVISIONING", "RUNNABLE", "RUNNING"]


def test_malformed_batch_events_are_ignored_not_crashed_on(cloud: Cloud, store: Any) -> None:
    assert cloud.invoke("job_events", {"detail-type": "Batch Job State Change", "detail": {}})["ignored"]
    assert cloud.invoke("job_events", {"detail-type": "Batch Job Queue Blocked", "detail": {}})["ignored"]


def test_an_event_gives_an_attempt_its_batch_job_id_when_the_submit_could_not(cloud: Cloud, store: Any) -> None:
    store.put_attempt(
        JOB, 1, AttemptRecord(instance_type="g4dn.xlarge", capacity=CapacityType.ON_DEMAND, job_queue="q")
    )
    event = {"detail-type": "Batch Job State Change", "time": "2026-11-22T10:00:00Z",
             "detail": {"jobName": f"gpupilot-{JOB}-a1", "jobId": "batch-123", "status": "RUNNABLE"}}  # fmt: skip
    cloud.invoke("job_events", event)
    assert store.get_job(JOB).attempts[1].batch_job_id == "batch-123"


# -- WaitForJobToStart / WaitForJobToFinish -------------------------------------------------------
def test_a_wait_parked_after_its_event_came_resumes_at_once(cloud: Cloud, store: Any) -> None:
    # Given an attempt whose RUNNING event came before the workflow parked its start wait
    _, batch_job = submitted(cloud)
    cloud.invoke("job_events", batch_event(batch_job["batch_job_id"], status="RUNNING"))
    # When the wait parks its token
    wait = {"job_id": JOB, "phase": "start", "attempt": 1, "batch_job_id": batch_job["batch_job_id"],
            "task_token": "token-of-an-ended-execution"}  # fmt: skip
    cloud.invoke("wait_for_job", wait)
    # Then it answered the token itself (Step Functions calls it spent) and forgot it
    assert store.get_job(JOB).waits == {}


def test_batchs_capacity_verdict_in_a_queue_blocked_event_resumes_the_parked_start_wait(
    cloud: Cloud, store: Any
) -> None:
    # Given an attempt RUNNABLE without a reason, its start wait parked with its timeout and the candidates
    state, batch_job = submitted(cloud)
    cloud.invoke("job_events", batch_event(batch_job["batch_job_id"], status="RUNNABLE"))
    wait = {
        "job_id": JOB,
        "phase": "start",
        "attempt": 1,
        "batch_job_id": batch_job["batch_job_id"],
        "task_token": "token-of-an-ended-execution",
        "timeout_seconds": 900,
        "selection": state["selection"],
    }
    cloud.invoke("wait_for_job", wait)  # fmt: skip
    parked = store.get_job(JOB).waits[WaitPhase.START]
    assert parked.timeout_seconds == 900 and parked.next_candidate is not None
    # When Batch's queue-blocked event says it lacks capacity
    blocked = batch_event(batch_job["batch_job_id"], status="RUNNABLE", statusReason=CAPACITY)
    cloud.invoke("job_events", blocked | {"detail-type": "Batch Job Queue Blocked"})
    # Then the wait was answered at once (its token sent, Step Functions calls it spent) and the verdict kept
    record = store.get_job(JOB)
    assert record.waits == {}
    assert record.attempts[1].verdict == CAPACITY
    assert (record.timeline[-1].reason, record.timeline[-1].reason_at) == (CAPACITY, "2026-11-22T10:00:00.000Z")


# -- DiagnoseStuckJob ------------------------------------------------------------------------------
def test_a_capacity_stuck_job_is_diagnosed_cancelled_and_falls_back(cloud: Cloud, store: Any) -> None:
    # Given an attempt Batch keeps RUNNABLE for lack of capacity
    state, batch_job = submitted(cloud)
    job = moto_job(batch_job["batch_job_id"], "RUNNABLE", CAPACITY)
    # When the stuck job is diagnosed
    result = cloud.invoke("diagnose", state | {"batch_job": batch_job, "previous": {"checks": 0}})
    # Then the cause is capacity with Batch's words, the workflow falls back, Batch's job is cancelled
    assert result["category"] == "INSUFFICIENT_CAPACITY"
    assert result["evidence"]["status_reason"] == CAPACITY
    assert (result["remedy"], result["next_index"]) == ("fall_back", 1)
    remembered = DynamoOfferingMemory(cloud.deployment.table_name).unavailable_offerings()
    assert "on-demand:us-east-1:g4dn.xlarge:us-east-1a" in remembered
    assert job.stop is True
    assert cloud.metric("StuckJobDiagnoses") == [1.0]


def test_a_job_that_started_as_its_wait_timed_out_resumes_its_wait(cloud: Cloud, store: Any) -> None:
    # Given a parked start wait, and the job RUNNING though its event never came
    state, batch_job = submitted(cloud)
    store.store_wait(JOB, WaitPhase.START, Wait(attempt=1, token="not-a-live-token"))
    moto_job(batch_job["batch_job_id"], "RUNNING")
    # When the diagnosis runs / Then it keeps waiting without spending a check and the record knows it runs
    result = cloud.invoke("diagnose", state | {"batch_job": batch_job, "previous": {"checks": 2}})
    assert (result["remedy"], result["checks"]) == ("keep_waiting", 2)
    record = store.get_job(JOB)
    assert (record.status, record.attempts[1].batch_status) == (JobStatus.RUNNING, "RUNNING")


def test_a_spot_attempt_whose_host_ec2_reclaimed_falls_back_and_is_remembered_in_the_zone_it_ran_in(
    cloud: Cloud, store: Any
) -> None:
    # Given a spot-first job's spot attempt that ran on an instance in the last zone, ended by EC2 reclaiming it
    spot_first = REQUEST | {"capacity": "spot-first", "instance_types": ["g5.xlarge"]}
    state = {"job_id": JOB, "request": spot_first, "selection": select(cloud, spot_first)}
    state["queue"] = cloud.invoke("ensure_queue", state)
    cloud.clock.advance()
    state["queue"] = cloud.invoke("ensure_queue", state | {"previous": state["queue"]})
    batch_job = cloud.invoke("submit_job", state)
    arn = container_instance_in(ZONES[-1])
    said = "Host EC2 (instance i-0abc1234) terminated."
    job = moto_job(batch_job["batch_job_id"], "FAILED", said)
    job.job_stopped = True
    job.attempts = [{"statusReason": said, "startedAt": 1_800_000_000_000, "stoppedAt": 1_800_000_060_000,
                     "container": {"containerInstanceArn": arn}}]  # fmt: skip
    cloud.invoke("job_events", batch_event(batch_job["batch_job_id"]))
    assert store.get_job(JOB).attempts[1].reclaimed
    # When the workflow diagnoses the reclaimed attempt (DiagnoseReclaimedJob)
    result = cloud.invoke("diagnose", state | {"batch_job": batch_job, "previous": {"checks": 0}})
    # Then it falls back to on-demand, the spot offering remembered where it ran, with the reclaim as its cause
    assert (result["category"], result["remedy"], result["next_index"]) == ("INSUFFICIENT_CAPACITY", "fall_back", 1)
    assert state["selection"]["candidates"][1]["capacity"] == "on-demand"
    remembered = DynamoOfferingMemory(cloud.deployment.table_name).unavailable_offerings()
    key = f"spot:us-east-1:g5.xlarge:{ZONES[-1]}"
    assert set(remembered) == {key}
    assert remembered[key].cause.startswith("EC2 reclaimed spot instances 1 time,")


# -- RecordCost, RecordFailure, the sweep -----------------------------------------------------------
def test_record_cost_prices_the_attempt_and_emits_the_cost_metric_once(cloud: Cloud, store: Any) -> None:
    _, batch_job = submitted(cloud)
    finished = {"status": "SUCCEEDED", "exit_code": 0, "started_at": "2026-11-22T10:00:00.000Z",
                "stopped_at": "2026-11-22T10:30:00.000Z"}  # fmt: skip
    cost = cloud.invoke("record_cost", {"job_id": JOB, "batch_job": batch_job, "finished": finished})
    cloud.invoke("record_cost", {"job_id": JOB, "batch_job": batch_job, "finished": finished})
    record = store.get_job(JOB)
    assert cost["usd"] == pytest.approx(0.526 * 0.5)
    assert record.status == JobStatus.SUCCEEDED and record.cost.usd == pytest.approx(0.263)
    assert cloud.metric("JobCostUsd") == [pytest.approx(0.263)]
    assert {namespace for namespace, _ in cloud.metrics} == {"GpuPilot"}


def test_an_attempt_priced_after_the_agents_last_report_gets_its_idle_gpu_seconds_as_waste_once(
    cloud: Cloud, store: Any
) -> None:
    # Given a submitted attempt whose host agent reported 10 idle minutes before the attempt was priced
    _, batch_job = submitted(cloud)
    utilization = {"mean": 2.0, "p95": 3.0, "max_memory_gib": 1.0, "idle_seconds": 600.0, "samples": 180}
    store.update_attempt(JOB, 1, {"gpu_utilization": utilization})
    finished = {"status": "SUCCEEDED", "exit_code": 0, "started_at": "2026-11-22T10:00:00.000Z",
                "stopped_at": "2026-11-22T10:30:00.000Z"}  # fmt: skip
    # When RecordCost prices it, twice (a retry)
    for _ in range(2):
        cost = cloud.invoke("record_cost", {"job_id": JOB, "batch_job": batch_job, "finished": finished})
    # Then its 10 idle minutes are gpu_idle waste at the job's share of the hourly price, once
    query = proxy_event("GET", "/costs?from=2026-11-01&to=2026-11-30", {}, None)
    waste = json.loads(cloud.invoke("api", query)["body"])["waste"]["by_reason"]
    assert waste["gpu_idle"] == pytest.approx(cost["hourly_usd"] * cost["gpu_share"] * 600 / 3600, abs=0.001)


def test_record_failure_terminates_attempts_the_workflow_state_does_not_know(cloud: Cloud, store: Any) -> None:
    # Given a submitted attempt, and a failure caught before $.batch_job was set
    _, batch_job = submitted(cloud)
    job = moto_job(batch_job["batch_job_id"], "RUNNING")
    error = {"Error": "States.TaskFailed", "Cause": "boom"}
    # When the failure is recorded
    result = cloud.invoke("record_failure", {"job_id": JOB, "state": {"job_id": JOB, "error": error}})
    # Then the job is FAILED with the cause and its Batch job was terminated
    record = store.get_job(JOB)
    assert result["recorded"] is True
    assert record.status == JobStatus.FAILED and record.error.startswith("States.TaskFailed: boom")
    assert job.stop is True and job.job_stopped_reason == "GPU Pilot workflow failed"


def test_the_sweep_replays_a_missed_batch_event_and_resumes_the_wait(cloud: Cloud, store: Any) -> None:
    # Given a parked start wait, and a Batch job that started but whose event never arrived
    _, batch_job = submitted(cloud)
    store.store_wait(JOB, WaitPhase.START, Wait(attempt=1, token="token-of-an-ended-execution"))
    moto_job(batch_job["batch_job_id"], "RUNNING")
    # When the health sweep runs
    report = cloud.invoke("health_sweep", {"source": "aws.events", "detail-type": "Scheduled Event"})
    # Then it replays the change and answers the token (Step Functions calls it spent: it is forgotten)
    assert report["summary"]["reconciled_events"] == 1
    record = store.get_job(JOB)
    assert record.status == JobStatus.RUNNING
    assert record.waits == {}


def test_the_sweep_describes_a_finished_job_the_lists_no_longer_show_and_resumes_its_wait(
    cloud: Cloud, store: Any
) -> None:
    # Given a parked finish wait, and a Batch job that ended while its event was lost
    _, batch_job = submitted(cloud)
    store.store_wait(JOB, WaitPhase.FINISH, Wait(attempt=1, token="token-of-an-ended-execution"))
    job = moto_job(batch_job["batch_job_id"], "SUCCEEDED")
    job.job_stopped = True
    # When the sweep runs / Then DescribeJobs finds what ListJobs (live jobs only) cannot, and the wait resumes
    report = cloud.invoke("health_sweep", {"source": "aws.events", "detail-type": "Scheduled Event"})
    assert report["summary"]["reconciled_events"] == 1
    assert store.get_job(JOB).attempts[1].batch_status == "SUCCEEDED"
    assert store.get_job(JOB).waits == {}


def test_the_sweep_prices_the_spot_attempt_whose_end_it_replays(cloud: Cloud, store: Any) -> None:
    # Given a spot attempt that ran ten minutes and ended while its event was lost
    batch_job = spot_submitted(cloud)
    job = moto_job(batch_job["batch_job_id"], "FAILED")
    job.job_stopped = True
    job.job_started_at = datetime(2026, 11, 22, 10, 0)
    job.job_stopped_at = datetime(2026, 11, 22, 10, 10)
    job.attempts = [{"startedAt": 1_800_000_000_000, "stoppedAt": 1_800_000_600_000}]
    # When the sweep replays the end / Then the attempt is priced at the spot price of its zones
    cloud.invoke("health_sweep", {"source": "aws.events", "detail-type": "Scheduled Event"})
    cost = store.get_job(JOB).attempts[1].cost
    assert cost is not None and cost.pricing.startswith("spot price history") and cost.runtime_seconds == 600
    assert cost.usd == round(cost.hourly_usd * 600 / 3600 * cost.gpu_share, 12) > 0


def test_the_sweep_fails_a_record_whose_batch_job_vanished(cloud: Cloud, store: Any) -> None:
    # Given a submitted job whose Batch job Batch no longer knows, and its workflow
    _, batch_job = submitted(cloud)
    store.set_execution_arn(JOB, "arn:aws:states:us-east-1:123456789012:execution:GpuJob:gone")
    from moto.batch.models import batch_backends

    del batch_backends["123456789012"]["us-east-1"]._jobs[batch_job["batch_job_id"]]
    # When the sweep runs / Then the record fails with the reason (stopping an execution that is gone is harmless)
    report = cloud.invoke("health_sweep", {"source": "aws.events", "detail-type": "Scheduled Event"})
    record = store.get_job(JOB)
    assert record.status == JobStatus.FAILED and "is gone" in record.error
    assert report["summary"]["vanished_jobs"] == 1


def test_the_sweep_cancels_a_foreign_job_stuck_past_the_hard_limit_and_reads_the_quota_of_an_empty_pool(
    cloud: Cloud, store: Any
) -> None:
    # Given someone else's job in a GPU Pilot queue, RUNNABLE for two days, and a pool without instances
    state = provisioned(cloud)
    batch = boto3.client("batch")
    definition = batch.register_job_definition(
        jobDefinitionName="someone-else",
        type="container",
        containerProperties={"image": "i", "vcpus": 1, "memory": 512},
    )["jobDefinitionArn"]
    queue = state["queue"]["job_queue"]
    foreign = batch.submit_job(jobName="someone-else", jobQueue=queue, jobDefinition=definition)["jobId"]
    job = moto_job(foreign, "RUNNABLE")
    from datetime import datetime, timedelta

    job.job_created_at = datetime.now() - timedelta(days=2)
    # When the sweep runs
    report = cloud.invoke("health_sweep", {"source": "aws.events", "detail-type": "Scheduled Event"})
    # Then the finding says no instance was launched (the quota read), and the job was cancelled
    [finding] = [f for f in report["findings"] if f["jobs"]]
    assert (finding["kind"], finding["resource"], finding["jobs"]) == ("NO_INSTANCES_LAUNCHED", queue, [foreign])
    assert finding["evidence"]["quota_code"] == "L-DB2E81BA" and finding["evidence"]["foreign_jobs"] == 1
    assert "cancelled 1 job " in finding["action"]
    assert job.stop is True and "NO_INSTANCES_LAUNCHED" in job.job_stopped_reason


def test_the_sweep_trusts_a_newer_event_over_an_older_describe(cloud: Cloud, store: Any) -> None:
    # Given the record already RUNNING (its event came) while DescribeJobs still says STARTING
    _, batch_job = submitted(cloud)
    cloud.invoke("job_events", batch_event(batch_job["batch_job_id"], status="RUNNING"))
    moto_job(batch_job["batch_job_id"], "STARTING")
    # When the sweep runs / Then it does not move the job back
    cloud.invoke("health_sweep", {"source": "aws.events", "detail-type": "Scheduled Event"})
    assert store.get_job(JOB).attempts[1].batch_status == "RUNNING"


def test_a_job_cancelled_while_its_attempt_was_submitted_has_that_batch_job_terminated(
    cloud: Cloud, store: Any
) -> None:
    # Given a job cancelled after its pool was ready but before SubmitBatchJob finished
    state = provisioned(cloud)
    store.finish(JOB, JobStatus.CANCELLED)
    # When SubmitBatchJob runs / Then it fails, and the Batch job it submitted is terminated
    with pytest.raises(HandlerError, match="JobAlreadyFinished"):
        cloud.invoke("submit_job", state)
    batch_job_id = store.get_job(JOB).attempts[1].batch_job_id
    from moto.batch.models import batch_backends

    assert batch_backends["123456789012"]["us-east-1"]._jobs[batch_job_id].stop is True


def test_a_retried_ensure_queue_records_an_invalid_pools_attempt_once(cloud: Cloud, store: Any) -> None:
    # Given an INVALID pool already diagnosed on attempt 1
    state = {"job_id": JOB, "request": REQUEST, "selection": select(cloud)}
    cloud.invoke("ensure_queue", state)
    cloud.clock.advance()
    cloud.lifecycle.invalid_reason = lambda _types: "CLIENT_ERROR - security group sg-1 does not exist"
    first = cloud.invoke("ensure_queue", state)
    # When Step Functions retries EnsureJobQueue / Then the same answer (but for the wait's start and deadline:
    # a retried first check starts the attempt's wait anew), one attempt
    again = cloud.invoke("ensure_queue", state)
    assert {**again, "since": None, "deadline": None} == {**first, "since": None, "deadline": None}
    assert list(store.get_job(JOB).attempts) == [1]


def test_record_cost_prices_a_spot_attempt_at_the_spot_price_when_it_is_first_to_see_its_end(
    cloud: Cloud, store: Any
) -> None:
    batch_job = spot_submitted(cloud)
    finished = {"status": "SUCCEEDED", "exit_code": 0, "started_at": "2026-11-22T10:00:00.000Z",
                "stopped_at": "2026-11-22T10:30:00.000Z"}  # fmt: skip
    cost = cloud.invoke("record_cost", {"job_id": JOB, "batch_job": batch_job, "finished": finished})
    assert cost["pricing"].startswith("spot price history") and cost["runtime_seconds"] == 1800
    assert "time-weighted over the attempt" in cost["pricing"]


def container_instance_in(zone: str) -> str:
    """A container instance of the (only) pool's ECS cluster, on an EC2 instance in `zone`: its ARN."""
    ec2, ecs = boto3.client("ec2"), boto3.client("ecs")
    subnet = next(s["SubnetId"] for s in ec2.describe_subnets()["Subnets"] if s["AvailabilityZone"] == zone)
    instance = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1, SubnetId=subnet)["Instances"][0]
    [pool] = boto3.client("batch").describe_compute_environments()["computeEnvironments"]
    document = json.dumps({"instanceId": instance["InstanceId"]})
    registered = ecs.register_container_instance(cluster=pool["ecsClusterArn"], instanceIdentityDocument=document)
    return str(registered["containerInstance"]["containerInstanceArn"])


@pytest.mark.parametrize("pricer", ["job_events", "record_cost"])
def test_a_spot_attempt_is_priced_in_the_zone_it_ran_in(cloud: Cloud, store: Any, pricer: str) -> None:
    # Given a spot attempt whose candidate zones are both of the deployment's, that ran on an instance in one
    batch_job = spot_submitted(cloud)
    zone = ZONES[-1]
    arn = container_instance_in(zone)
    started, stopped = 1_800_000_000_000, 1_800_001_800_000
    # When the function that learns of its end prices it (the event names its container instance; RecordCost
    # finds it on the attempt, where the RUNNING event put it)
    if pricer == "job_events":
        container = {"exitCode": 0, "containerInstanceArn": arn}
        cloud.invoke("job_events", batch_event(batch_job["batch_job_id"], status="SUCCEEDED", startedAt=started,
                                               stoppedAt=stopped, container=container,
                                               attempts=[{"startedAt": started, "stoppedAt": stopped}]))  # fmt: skip
    else:
        store.update_attempt(JOB, 1, {"container_instance_arn": arn})
        finished = {"status": "SUCCEEDED", "exit_code": 0, "started_at": "2026-11-22T10:00:00.000Z",
                    "stopped_at": "2026-11-22T10:30:00.000Z"}  # fmt: skip
        cloud.invoke("record_cost", {"job_id": JOB, "batch_job": batch_job, "finished": finished})
    # Then at the spot price of that zone alone
    attempt = store.get_job(JOB).attempts[1]
    assert attempt.container_instance_arn == arn and len(attempt.zones) > 1
    assert attempt.cost is not None and attempt.cost.pricing.startswith(f"spot price history, {zone}, ")


def forget_prices(cloud: Cloud) -> None:
    """What a day does to the table's Price List cache (its TTL)."""
    from functions.shared import constants as c
    from functions.shared.adapters.prices import PRICES_PARTITION

    boto3.client("dynamodb").delete_item(
        TableName=cloud.deployment.table_name,
        Key={c.TABLE_PK: {"S": PRICES_PARTITION}, c.TABLE_SK: {"S": "us-east-1"}},
    )


@pytest.mark.parametrize("pricer", ["job_events", "record_cost", "health_sweep"])
def test_each_function_that_prices_an_attempt_refills_an_expired_price_cache(
    cloud: Cloud, store: Any, pricer: str
) -> None:
    # Given an attempt that ran 30 minutes, and the day-old Price List cache gone
    _, batch_job = submitted(cloud)
    forget_prices(cloud)
    started, stopped = 1_800_000_000_000, 1_800_001_800_000
    # When the function that learns of its end prices it
    if pricer == "job_events":
        cloud.invoke("job_events", batch_event(batch_job["batch_job_id"], status="SUCCEEDED", startedAt=started,
                                               stoppedAt=stopped, container={"exitCode": 0},
                                               attempts=[{"startedAt": started, "stoppedAt": stopped}]))  # fmt: skip
    elif pricer == "record_cost":
        finished = {"status": "SUCCEEDED", "exit_code": 0, "started_at": "2026-11-22T10:00:00.000Z",
                    "stopped_at": "2026-11-22T10:30:00.000Z"}  # fmt: skip
        cloud.invoke("record_cost", {"job_id": JOB, "batch_job": batch_job, "finished": finished})
    else:
        job = moto_job(batch_job["batch_job_id"], "SUCCEEDED")
        job.job_stopped = True
        job.job_started_at, job.job_stopped_at = datetime(2026, 11, 22, 10, 0), datetime(2026, 11, 22, 10, 30)
        job.attempts = [{"startedAt": started, "stoppedAt": stopped}]
        cloud.invoke("health_sweep", {"source": "aws.events", "detail-type": "Scheduled Event"})
    # Then the attempt is priced from the Price List, which is in the table again
    cost = store.get_job(JOB).attempts[1].cost
    assert cost is not None and cost.usd == pytest.approx(0.263) and "AWS Price List" in cost.pricing
    assert prices_cached(cloud)


def prices_cached(cloud: Cloud) -> bool:
    from functions.shared import constants as c
    from functions.shared.adapters.prices import PRICES_PARTITION

    key = {c.TABLE_PK: {"S": PRICES_PARTITION}, c.TABLE_SK: {"S": "us-east-1"}}
    return "Item" in boto3.client("dynamodb").get_item(TableName=cloud.deployment.table_name, Key=key)
