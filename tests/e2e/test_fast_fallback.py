"""Fall back within seconds, never to a bill nobody asked for: Batch's verdict moves the job on at once, a spot job
whose hosts EC2 reclaims moves to on-demand, and a wait's cause and next action are visible while it lasts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import pytest

from functions.shared.domain.core.clock import seconds_between
from tests.e2e.conftest import PATIENCE_SECONDS, RunningCloud

pytestmark = pytest.mark.e2e
JOB = {"name": "fallback", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"]}
FIRST = "g4dn.xlarge"


def verdict_to_next_attempt(job: dict[str, Any]) -> float:
    """Seconds from Batch's verdict on the first attempt (its RUNNABLE entry's reason, when Batch said it) to the
    next attempt's PROVISIONING entry, as the job's timeline shows them."""
    entries = job["timeline"]
    runnable = next(i for i, e in enumerate(entries) if e["status"] == "RUNNABLE")
    verdict = entries[runnable]
    following = next(e for e in entries[runnable:] if e["status"] == "PROVISIONING")
    return seconds_between(verdict["reason_at"] or verdict["at"], following["at"])


def test_with_batch_reporting_insufficient_capacity_the_job_reaches_its_second_candidate_within_seconds(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given the cheapest GPU type has no capacity (Batch says so), and stuck_after_minutes left at its 15
    cloud = cloud_factory({"instance_types": {FIRST: {"capacity": "none"}}, "jobs": {"runtime_seconds": 1}})

    # When a job is submitted
    job_id = cloud.api.request("POST", "/jobs", JOB).body["job_id"]
    job = cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"})

    # Then it ran on its second candidate, its first attempt diagnosed from Batch's own words
    first, second = job["attempts"]
    assert job["status"] == "SUCCEEDED", job
    assert (first["instance_type"], first["diagnosis"]["category"]) == (FIRST, "INSUFFICIENT_CAPACITY")
    assert second["instance_type"] != FIRST and second["status"] == "SUCCEEDED"
    # And the timeline shows Batch's verdict (its words, and when) and the next attempt seconds after it
    runnable = next(e for e in job["timeline"] if e["status"] == "RUNNABLE")
    assert runnable["reason"].startswith("CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"), job["timeline"]
    # (seconds, not the 15 minutes of the wait it cut short: a minute leaves a busy machine room)
    assert verdict_to_next_attempt(job) < 60
    # And the workflow diagnosed at Batch's word, not at the wait's timeout
    sfn = boto3.client("stepfunctions", endpoint_url=cloud.aws_url, region_name="us-east-1")
    history = sfn.get_execution_history(executionArn=job["execution_arn"], maxResults=1000)["events"]
    entered = [e["stateEnteredEventDetails"]["name"] for e in history if "stateEnteredEventDetails" in e]
    assert entered[entered.index("WaitForJobToStart") :][:3] == ["WaitForJobToStart", "DidJobStart", "DiagnoseStuckJob"]
    assert not [e for e in history if e["type"] == "TaskTimedOut"]


def test_a_job_waiting_behind_a_blocked_queue_head_falls_back_on_batch_s_verdict_on_that_head(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given the cheapest GPU type has no capacity, a job that may run on it alone heading its queue, and a job with a
    # fallback queued behind it, both waiting up to an hour before a diagnosis of their own
    cloud = cloud_factory({"instance_types": {FIRST: {"capacity": "none"}}, "jobs": {"runtime_seconds": 1}})
    patient = {"stuck_after_minutes": 60, "price_band": 1000}
    head_id = cloud.api.request("POST", "/jobs", JOB | patient | {"instance_types": [FIRST]}).body["job_id"]
    head = cloud.wait_for(head_id, {"RUNNABLE"}, 60)
    behind_id = cloud.api.request("POST", "/jobs", JOB | patient | {"name": "behind"}).body["job_id"]

    # When Batch says why the queue is blocked (of its head job only, as AWS does)
    behind = cloud.wait_for(behind_id, {"SUCCEEDED", "FAILED"}, 120)

    # Then the job behind it fell back on that verdict, long before its own hour, and says whose words they were
    first, second = behind["attempts"]
    assert behind["status"] == "SUCCEEDED", behind
    assert (first["instance_type"], first["diagnosis"]["category"]) == (FIRST, "INSUFFICIENT_CAPACITY")
    assert first["diagnosis"]["evidence"]["queue_head_job"] == head["attempts"][0]["batch_job_id"]
    assert second["instance_type"] != FIRST
    runnable = next(e for e in behind["timeline"] if e["status"] == "RUNNABLE")
    said = ("CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY", head["attempts"][0]["batch_job_id"])
    assert all(words in runnable["reason"] for words in said), behind["timeline"]
    assert verdict_to_next_attempt(behind) <= 10
    # And the head, with no other GPU type to try, still waits for capacity
    assert cloud.api.request("GET", f"/jobs/{head_id}").body["status"] == "RUNNABLE"


def test_a_spot_first_job_whose_spot_hosts_are_reclaimed_finishes_on_on_demand_with_both_attempts_priced(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given g6.xlarge offered in one zone, where EC2 reclaims spot instances a second after they launch, and jobs
    # that run for 4 seconds
    cloud = cloud_factory(
        {
            "instance_types": {"g6.xlarge": {"zones": ["us-east-1a"]}},
            "spot": {"g6.xlarge": {"interrupt_after_seconds": 1, "hourly_usd": 0.35}},
            "jobs": {"runtime_seconds": 4},
        }
    )

    # When a spot-first job that may run on g6.xlarge only is submitted
    request = JOB | {"capacity": "spot-first", "instance_types": ["g6.xlarge"]}
    job_id = cloud.api.request("POST", "/jobs", request).body["job_id"]
    # (and its logs are followed from the start, without --attempt)
    followed = cloud.cli("logs", job_id, "--follow", timeout=PATIENCE_SECONDS)
    job = cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"})

    # Then it finished on on-demand after one reclaim (spot_reclaims_before_fallback's default)
    spot, on_demand = job["attempts"]
    assert job["status"] == "SUCCEEDED", job
    assert (spot["capacity"], spot["status"], on_demand["capacity"], on_demand["status"]) == (
        "spot", "FAILED", "on-demand", "SUCCEEDED",
    )  # fmt: skip
    # And the reclaimed attempt shows Batch's host-termination words, its diagnosis, and its price
    [said] = spot["host_terminations"]
    assert said.startswith("Host EC2 (instance i-") and said.endswith(") terminated.")
    assert spot["diagnosis"]["category"] == "INSUFFICIENT_CAPACITY" and said in spot["diagnosis"]["reason"]
    assert spot["cost"]["pricing"].startswith("spot") and spot["cost"]["usd"] > 0
    assert on_demand["cost"]["usd"] > 0
    assert job["cost"]["usd"] == pytest.approx(spot["cost"]["usd"] + on_demand["cost"]["usd"], abs=1e-6)
    # And following its logs went from the reclaimed attempt's stream on to the fallback's, to the end
    assert followed.returncode == 0, followed.stderr
    headers = [line for line in followed.stderr.splitlines() if line.startswith("attempt ")]
    assert [line.split()[1] for line in headers][-2:] == ["1", "2"], followed.stderr
    assert followed.stdout.splitlines()[-1].endswith("exit code 0 (the world file's jobs.exit_code)"), followed.stdout
    # And the next plan leaves that spot offering (type and zone) out, saying why and until when
    plan = cloud.api.request("POST", "/plan", request).body
    assert [c["capacity"] for c in plan["candidates"]] == ["on-demand"]
    [rejected] = [r for r in plan["rejected"] if r["instance_type"] == "g6.xlarge"]
    assert rejected["reason"].startswith("spot: EC2 reclaimed spot instances 1 time,"), rejected
    assert "remembered until" in rejected["reason"]


def test_the_cause_of_a_wait_shows_in_plain_status_within_seconds_with_the_time_of_the_next_action(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given the cheapest type's instances never register with ECS (Batch gives no reason), stuck_after left at 15
    cloud = cloud_factory({"instance_types": {FIRST: {"ecs_agent": "never_registers"}}})
    job_id = cloud.api.request("POST", "/jobs", JOB).body["job_id"]

    # When a user asks its status, as the evidence builds up
    def status() -> str | None:
        result = cloud.cli("status", job_id)
        assert result.returncode == 0, result.stderr
        return result.stdout if "ECS_AGENT_NOT_REGISTERED" in result.stdout else None

    shown = cloud.until("plain status naming the cause", status, every=1)

    # Then plain status names the cause with its evidence, and when the job falls back, to what
    job = cloud.api.request("GET", f"/jobs/{job_id}").body
    assert "ECS_AGENT_NOT_REGISTERED: 1 instance running but never registered with ECS" in shown, shown
    action = job["next_action"]
    assert action["candidate"]["instance_type"] != FIRST
    words = f"falls back to {action['candidate']['instance_type']} (on-demand) at {action['at'][11:19]} UTC unless"
    assert words in shown, shown
    # 15 minutes after the wait began (after the job was made, before now), not "meanwhile"
    assert seconds_between(job["created_at"], action["at"]) >= 15 * 60
    assert seconds_between(cloud.clock()["now"], action["at"]) <= 15 * 60
    assert "meanwhile" not in shown
    cloud.api.request("DELETE", f"/jobs/{job_id}")
