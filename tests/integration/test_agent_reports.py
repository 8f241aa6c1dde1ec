"""The host agent's reports reach job_events through the stack's rule and become the attempt's fields; an idle report
warns about or cancels the job as its idle_policy says. Against moto, with the synthesized template's environment."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from functions.shared.adapters.job_store import DynamoJobStore
from functions.shared.domain.core.vocabulary import AttemptStatus, BatchStatus, CapacityType, JobStatus
from functions.shared.domain.jobs.records import AttemptRecord
from functions.shared.domain.requests.job_request import JobRequest
from gpupilot.localcloud.gateway_event import proxy_event
from host_agent.report import DETAIL_TYPE, SOURCE
from tests.integration.conftest import Cloud
from tests.unit.builders import candidate

JOB = "job00000042"
REQUEST = {"name": "train", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["python", "train.py"],
           "checkpoint": {"every_minutes": 10}}  # fmt: skip


def jobs_with(cloud: Cloud, request: dict[str, Any]) -> DynamoJobStore:
    jobs = DynamoJobStore(cloud.deployment.table_name)
    jobs.create_job(JOB, JobRequest.model_validate(request))
    attempt = AttemptRecord.of(candidate("g5.xlarge", capacity=CapacityType.SPOT), "gpupilot-q", AttemptStatus.RUNNING)
    jobs.put_attempt(JOB, 1, attempt.model_copy(update={"started_at": "2027-01-15T08:00:00.000Z"}))
    return jobs


def report(reason: str, sequence: int, **detail: Any) -> dict[str, Any]:
    """The event EventBridge hands job_events for one agent report (host_agent/report.py's entry)."""
    body = {"job_id": JOB, "attempt": 1, "batch_job_id": "b-1", "pool": "gpupilot-q", "instance_id": "i-1",
            "instance_type": "g5.xlarge", "reason": reason, "at": "2027-01-15T10:00:00.000Z", "sequence": sequence,
            "image_pull_seconds": 41.5, "resumed_from": None, "interruption_notice_at": None, "reclaim_at": None,
            "gpu_utilization": None, "checkpoint": None} | detail  # fmt: skip
    return {"source": SOURCE, "detail-type": DETAIL_TYPE, "time": body["at"], "detail": body}


def test_the_stack_routes_the_agents_reports_to_job_events(cloud: Cloud) -> None:
    rules = boto3.client("events").list_rules()["Rules"]
    patterns = [json.loads(rule["EventPattern"]) for rule in rules if "EventPattern" in rule]
    assert {"source": [SOURCE], "detail-type": [DETAIL_TYPE]} in patterns


def test_a_reclaimed_attempt_records_its_notice_checkpoint_and_the_progress_it_lost(cloud: Cloud) -> None:
    # Given a checkpointing job's running spot attempt
    jobs_with(cloud, REQUEST)
    utilization = {"mean": 87.5, "p95": 99.0, "max_memory_gib": 20.1, "idle_seconds": 0.0, "samples": 42}
    # When its agent reports the notice's checkpoint: saved 9 minutes before the reclaim, uploaded after the notice
    cloud.invoke("job_events", report(
        "checkpoint", 2, interruption_notice_at="2027-01-15T10:00:00.000Z", reclaim_at="2027-01-15T10:02:00.000Z",
        checkpoint={"saved_at": "2027-01-15T09:53:00.000Z", "uploaded_at": "2027-01-15T10:01:10.000Z"},
        gpu_utilization=utilization | {"idle_since": None},
    ))  # fmt: skip
    # And an older report arrives late
    cloud.invoke("job_events", report("started", 1, image_pull_seconds=12.0))

    # Then the attempt, as GET /jobs/{job_id} answers it, holds what the latest report said
    answer = cloud.invoke("api", proxy_event("GET", f"/jobs/{JOB}", {}, None))
    [attempt] = json.loads(answer["body"])["attempts"]
    assert attempt["interruption_notice_at"] == "2027-01-15T10:00:00.000Z"
    assert attempt["checkpoint_uploaded_at"] == "2027-01-15T10:01:10.000Z"
    assert attempt["progress_lost_seconds"] == 540.0
    assert attempt["gpu_utilization"] == utilization
    assert attempt["image_pull_seconds"] == 41.5


def test_a_reclaim_without_a_checkpoint_loses_everything_since_the_attempt_started(cloud: Cloud) -> None:
    jobs = jobs_with(cloud, {k: v for k, v in REQUEST.items() if k != "checkpoint"})
    cloud.invoke("job_events", report("notice", 1, interruption_notice_at="2027-01-15T10:00:00.000Z"))
    # The reclaim two minutes after the notice, two hours and two minutes after the start
    assert jobs.get_job(JOB).attempts[1].progress_lost_seconds == 7320.0


def submitted_with(cloud: Cloud, request: dict[str, Any]) -> DynamoJobStore:
    """The job's first attempt submitted to Batch (its pool made ready on the local clock) and its workflow running."""
    jobs = DynamoJobStore(cloud.deployment.table_name)
    jobs.create_job(JOB, JobRequest.model_validate(request))
    state: dict[str, Any] = {"job_id": JOB, "request": request}
    state["selection"] = cloud.invoke("select_gpu", state)
    state["queue"] = cloud.invoke("ensure_queue", state)
    cloud.clock.advance()
    state["queue"] = cloud.invoke("ensure_queue", state | {"previous": state["queue"]})
    cloud.invoke("submit_job", state)
    # Its workflow's execution (the integration cloud does not run it: it stays RUNNING until stopped)
    execution = boto3.client("stepfunctions").start_execution(stateMachineArn=cloud.deployment.state_machine_arn)
    jobs.set_execution_arn(JOB, execution["executionArn"])
    return jobs


def test_a_job_idle_past_its_idle_policy_cancel_is_cancelled_and_its_workflow_stopped(cloud: Cloud) -> None:
    # Given a submitted job whose idle_policy cancels after 30 idle minutes
    jobs = submitted_with(cloud, REQUEST | {"idle_policy": {"after_minutes": 30, "action": "cancel"}})
    # When its agent reports its GPUs idle that long
    cloud.invoke("job_events", report("idle", 5))
    # Then the job is cancelled saying why and its workflow stopped (its Batch job terminated: moto's has ended)
    job = jobs.get_job(JOB)
    assert job.status == JobStatus.CANCELLED
    assert job.error == "GPU_IDLE: its GPUs stayed under 5% utilisation for 30 minutes"
    execution = boto3.client("stepfunctions").describe_execution(executionArn=job.execution_arn or "")
    assert execution["status"] == "ABORTED"


@pytest.mark.parametrize("action", ["warn", "cancel"])
def test_a_job_idle_past_its_idle_policy_is_warned_about_or_cancelled_with_the_reason(
    cloud: Cloud, action: str
) -> None:
    # Given a job whose idle_policy allows 30 idle minutes
    jobs = jobs_with(cloud, REQUEST | {"idle_policy": {"after_minutes": 30, "action": action}})
    # When its agent reports its GPUs idle that long
    cloud.invoke("job_events", report("idle", 5))
    # Then the job is warned, or cancelled, saying why
    job = jobs.get_job(JOB)
    reason = "GPU_IDLE: its GPUs stayed under 5% utilisation for 30 minutes"
    if action == "warn":
        assert job.status != JobStatus.CANCELLED and job.attempts[1].warning == reason
        # And what the sweep's GPU_IDLE finding says of it is kept: when, the policy, the job's GPUs
        warned = job.attempts[1].idle_warning
        assert warned is not None and (warned.at, warned.after_minutes, warned.gpus) == (
            "2027-01-15T10:00:00.000Z",
            30,
            1,
        )
    else:
        assert job.status == JobStatus.CANCELLED and job.error == reason


def test_an_idle_report_of_a_job_without_an_idle_policy_changes_nothing_but_its_fields(cloud: Cloud) -> None:
    jobs = jobs_with(cloud, REQUEST)
    cloud.invoke("job_events", report("idle", 5))
    job = jobs.get_job(JOB)
    assert job.status != JobStatus.CANCELLED and job.attempts[1].warning is None


def _costs(cloud: Cloud) -> dict[str, Any]:
    answer = cloud.invoke("api", proxy_event("GET", "/costs?from=2027-01-01&to=2027-01-31", {}, None))
    assert answer["statusCode"] == 200, answer["body"]
    return dict(json.loads(answer["body"]))


@pytest.mark.parametrize("idle_seconds", [0.0, 1800.0])
def test_a_priced_attempt_s_idle_gpu_seconds_are_gpu_idle_waste_and_a_busy_one_has_none(
    cloud: Cloud, idle_seconds: float
) -> None:
    # Given a priced attempt: $1.20 an hour, the job's share half the instance
    jobs = jobs_with(cloud, REQUEST)
    cost = {"usd": 2.4, "hourly_usd": 1.2, "runtime_seconds": 7200.0, "gpu_share": 0.5, "pricing": "on-demand"}
    jobs.update_attempt(JOB, 1, {"cost": cost})
    utilization = {"mean": 40.0, "p95": 90.0, "max_memory_gib": 3.0, "idle_seconds": idle_seconds, "samples": 700}
    # When its agent reports its GPUs idle that long, and again (a retried delivery)
    for sequence in (7, 8):
        cloud.invoke("job_events", report("ended", sequence, gpu_utilization=utilization | {"idle_since": None}))
    # Then half an hour of its half of the instance is gpu_idle waste, once; none for a busy job
    waste = _costs(cloud)["waste"]["by_reason"].get("gpu_idle", 0.0)
    assert waste == pytest.approx(0.3 if idle_seconds else 0.0)


def ec2_signal(detail_type: str, at: str, instance_id: str = "i-1") -> dict[str, Any]:
    """EC2's event as EventBridge hands it to job_events (Amazon EC2 User Guide's examples)."""
    detail = {"instance-id": instance_id} | ({"instance-action": "terminate"} if "Warning" in detail_type else {})
    arn = f"arn:aws:ec2:us-east-1:123456789012:instance/{instance_id}"
    return {"version": "0", "id": "e-1", "detail-type": detail_type, "source": "aws.ec2", "account": "123456789012",
            "time": at, "region": "us-east-1", "resources": [arn], "detail": detail}  # fmt: skip


WARNING, REBALANCE = "EC2 Spot Instance Interruption Warning", "EC2 Instance Rebalance Recommendation"


def running_on(cloud: Cloud, host: str) -> DynamoJobStore:
    """A running spot attempt whose host agent reported the EC2 instance it runs on."""
    jobs = jobs_with(cloud, REQUEST)
    jobs.update_attempt(JOB, 1, {"batch_job_id": "b-1", "batch_status": BatchStatus.RUNNING, "host": host})
    return jobs


def test_the_stack_routes_ec2_s_spot_signals_to_job_events(cloud: Cloud) -> None:
    rules = boto3.client("events").list_rules()["Rules"]
    patterns = [json.loads(rule["EventPattern"]) for rule in rules if "EventPattern" in rule]
    assert {"source": ["aws.ec2"], "detail-type": [WARNING, REBALANCE]} in patterns


def test_ec2_s_rebalance_recommendation_and_interruption_warning_are_recorded_on_the_attempt_on_that_host_once(
    cloud: Cloud,
) -> None:
    # Given a running spot attempt on i-1
    jobs = running_on(cloud, "i-1")

    # When EC2 recommends a rebalance, then warns of the interruption (delivered twice, as EventBridge may)
    cloud.invoke("job_events", ec2_signal(REBALANCE, "2027-01-15T09:59:00Z"))
    for _ in range(2):
        answer = cloud.invoke("job_events", ec2_signal(WARNING, "2027-01-15T10:00:00Z"))

    # Then the attempt holds when each came, and the job's timeline notes each once, naming the host
    job = jobs.get_job(JOB)
    attempt = job.attempts[1]
    assert answer["recorded"] == [{"job_id": JOB, "attempt": 1}]
    assert (attempt.rebalance_recommended_at, attempt.interruption_notice_at) == (
        "2027-01-15T09:59:00.000Z", "2027-01-15T10:00:00.000Z"
    )  # fmt: skip
    notes = [entry.reason for entry in job.timeline if entry.note]
    assert notes == [
        "host i-1 rebalance recommendation: EC2 gave it at 2027-01-15T09:59:00.000Z",
        "host i-1 spot interruption warning: EC2 gave it at 2027-01-15T10:00:00.000Z (terminate)",
    ]


def test_the_notice_the_host_agent_recorded_first_stands_and_another_instance_s_warning_changes_nothing(
    cloud: Cloud,
) -> None:
    # Given a running spot attempt on i-1 whose agent already reported the notice (from the instance metadata)
    jobs = running_on(cloud, "i-1")
    cloud.invoke("job_events", report("notice", 3, interruption_notice_at="2027-01-15T09:59:58.000Z"))

    # When EC2's event of the same notice arrives after it, and a warning of an instance no attempt runs on
    cloud.invoke("job_events", ec2_signal(WARNING, "2027-01-15T10:00:00Z"))
    ignored = cloud.invoke("job_events", ec2_signal(WARNING, "2027-01-15T10:00:00Z", instance_id="i-other"))

    # Then the agent's time stands (the first writer wins), and the other instance's warning is ignored
    assert jobs.get_job(JOB).attempts[1].interruption_notice_at == "2027-01-15T09:59:58.000Z"
    assert ignored["ignored"] == "no running attempt on i-other"
