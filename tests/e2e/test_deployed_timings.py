"""The timings a deployment runs with, played out on the local cloud's clock: with `--timings deployed` the functions
get no local shortcut, so the workflow polls a new pool every 10 s and gives it 30 minutes, a job waits its 15 minutes
for a GPU, and the sweep leaves an instance 10 minutes to join ECS (functions/shared/domain/settings.py's defaults, the
values a deployed stack's functions read). The test moves the clock past each, never waiting real minutes."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from functions.shared.domain.core.clock import seconds_between
from tests.e2e.conftest import RunningCloud
from tests.e2e.test_fleet_diagnosis import aws

pytestmark = pytest.mark.e2e
FIRST = "g4dn.xlarge"
JOB = {"name": "deployed", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"],
       "instance_types": [FIRST, "g5.xlarge"]}  # fmt: skip
# What a deployment runs with (settings.py; docs/how-it-works.md)
QUEUE_POLL_SECONDS = 10
PROVISION_TIMEOUT_SECONDS = 30 * 60
STUCK_AFTER_SECONDS = 15 * 60
REGISTRATION_GRACE_SECONDS = 10 * 60
STARTED = {"RUNNABLE", "STARTING", "RUNNING", "SUCCEEDED", "FAILED"}


def entered(cloud: RunningCloud, execution_arn: str, state: str) -> list[dict[str, Any]]:
    """The input of each time the job's workflow entered `state`, in order."""
    sfn = aws(cloud, "stepfunctions")
    events = sfn.get_execution_history(executionArn=execution_arn, maxResults=1000)["events"]
    details = [e["stateEnteredEventDetails"] for e in events if "stateEnteredEventDetails" in e]
    return [json.loads(d["input"]) for d in details if d["name"] == state]


def past_pool_polls(cloud: RunningCloud, job_id: str, statuses: set[str]) -> dict[str, Any]:
    """The job once it reaches `statuses`, the clock moved one pool poll each time its workflow waits for a pool."""
    polls_seen = 0

    def moved_on() -> dict[str, Any] | None:
        nonlocal polls_seen
        job = cloud.api.request("GET", f"/jobs/{job_id}").body
        if job["status"] in statuses:
            return dict(job)
        polls = len(entered(cloud, job["execution_arn"], "WaitForJobQueue"))
        if polls > polls_seen:
            cloud.advance(QUEUE_POLL_SECONDS)
            polls_seen = polls
        return None

    return dict(cloud.until(f"job {job_id} in {sorted(statuses)}", moved_on))


def instances_of(cloud: RunningCloud, instance_type: str) -> list[dict[str, Any]]:
    reservations = aws(cloud, "ec2").describe_instances(Filters=[{"Name": "instance-type", "Values": [instance_type]}])[
        "Reservations"
    ]
    return [i for r in reservations for i in r["Instances"]]


def age_seconds(cloud: RunningCloud, instance: dict[str, Any]) -> float:
    """How long ago, on the local cloud's clock, the instance launched."""
    launched: datetime = instance["LaunchTime"]
    return seconds_between(launched.isoformat(), cloud.clock()["now"])


def sweep(cloud: RunningCloud) -> dict[str, Any]:
    swept = cloud.cli("--json", "sweep")
    assert swept.returncode == 0, swept.stderr
    return dict(json.loads(swept.stdout))


def unregistered(report: dict[str, Any], instance_id: str) -> list[dict[str, Any]]:
    return [f for f in report["findings"] if f["kind"] == "ECS_AGENT_NOT_REGISTERED" and instance_id in f["instances"]]


def test_an_agent_that_never_registers_is_given_ten_minutes_and_the_job_falls_back_after_its_fifteen(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a local cloud with a deployment's timings, whose T4 instances never join ECS
    world = {"instance_types": {FIRST: {"ecs_agent": "never_registers"}}, "jobs": {"runtime_seconds": 1}}
    cloud = cloud_factory(world, timings="deployed")

    # When a job whose first choice is the T4 runs, the clock moved one pool poll at a time until Batch has it
    job_id = cloud.api.request("POST", "/jobs", JOB).body["job_id"]
    waiting = past_pool_polls(cloud, job_id, STARTED)

    # Then its workflow ran with the deployment's pool poll, provisioning deadline and start wait
    [first_poll, *_] = entered(cloud, waiting["execution_arn"], "WaitForJobQueue")
    timeouts = first_poll["timeouts"]
    assert (timeouts["queue_poll_seconds"], timeouts["provision_timeout_seconds"], timeouts["stuck_after_seconds"]) == (
        QUEUE_POLL_SECONDS, PROVISION_TIMEOUT_SECONDS, STUCK_AFTER_SECONDS,
    )  # fmt: skip
    # (a new pool took one poll: its first check and the job's submission are a poll apart on the clock)
    timeline = {e["status"]: e["at"] for e in reversed(waiting["timeline"])}
    assert seconds_between(timeline["PROVISIONING"], timeline["RUNNABLE"]) >= QUEUE_POLL_SECONDS

    # When its instance has run nine minutes without joining ECS, and a sweep looks
    [instance] = cloud.until("the T4 instance Batch launched", lambda: instances_of(cloud, FIRST))
    cloud.advance(max(0.0, REGISTRATION_GRACE_SECONDS - 60 - age_seconds(cloud, instance)))
    early = sweep(cloud)

    # Then the sweep leaves it alone (it may still be booting), and the job still waits on its first attempt
    assert unregistered(early, instance["InstanceId"]) == [], early["findings"]
    assert [i["State"]["Name"] for i in instances_of(cloud, FIRST)] == ["running"]
    job = cloud.api.request("GET", f"/jobs/{job_id}").body
    assert (job["status"], len(job["attempts"])) == ("RUNNABLE", 1), job

    # When the clock reaches the end of the job's 15-minute start wait
    action = job["next_action"]
    assert seconds_between(job["created_at"], action["at"]) >= STUCK_AFTER_SECONDS
    cloud.advance(seconds_between(cloud.clock()["now"], action["at"]) + 1)
    done = past_pool_polls(cloud, job_id, {"SUCCEEDED", "FAILED"})

    # Then it was diagnosed then (not before), its instance named as never registered, and it ran on its next choice
    first, last = done["attempts"][0], done["attempts"][-1]
    assert done["status"] == "SUCCEEDED", done
    assert (first["instance_type"], first["diagnosis"]["category"]) == (FIRST, "ECS_AGENT_NOT_REGISTERED")
    named = first["diagnosis"]["evidence"]["instances_unregistered"]
    assert [i["instance_id"] for i in named] == [instance["InstanceId"]]
    fallback = next(e for e in done["timeline"] if (e["reason"] or "").startswith(f"falling back from {FIRST}"))
    assert seconds_between(fallback["at"], action["at"]) == 0  # the fallback came at the wait's end, not before
    assert last["instance_type"] != FIRST and last["status"] == "SUCCEEDED"

    # And the next sweep, past the instance's ten minutes, terminates it and says so
    late = sweep(cloud)
    [finding] = unregistered(late, instance["InstanceId"])
    assert age_seconds(cloud, instance) > REGISTRATION_GRACE_SECONDS
    assert "terminated" in finding["action"]
    assert [i["State"]["Name"] for i in instances_of(cloud, FIRST)] == ["terminated"]


def test_a_pool_still_creating_after_thirty_minutes_is_left_behind_and_the_job_runs_on_its_next_choice(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a local cloud with a deployment's timings, where Batch takes two hours to create a T4 compute environment
    world = {"instance_types": {FIRST: {"compute_environment_creating_seconds": 7200}}, "jobs": {"runtime_seconds": 1}}
    cloud = cloud_factory(world, timings="deployed")

    # When a job whose first choice is the T4 polls its pool, and the clock nears its 30 minutes
    job_id = cloud.api.request("POST", "/jobs", JOB).body["job_id"]
    execution = cloud.until("the job's workflow", lambda: cloud.api.request("GET", f"/jobs/{job_id}").body
                            .get("execution_arn"))  # fmt: skip
    cloud.until("the first pool poll", lambda: entered(cloud, execution, "WaitForJobQueue"))
    cloud.advance(PROVISION_TIMEOUT_SECONDS - 60)
    cloud.until("a pool poll near the deadline", lambda: len(entered(cloud, execution, "WaitForJobQueue")) >= 2)
    near = cloud.api.request("GET", f"/jobs/{job_id}").body

    # Then it still waits for that pool
    assert (near["status"], near["instance_type"]) == ("PROVISIONING", FIRST), near

    # When the clock passes the deadline (and the next choice's new pool is polled)
    cloud.advance(60 + QUEUE_POLL_SECONDS)
    done = past_pool_polls(cloud, job_id, {"SUCCEEDED", "FAILED"})

    # Then the T4's pool was diagnosed not ready after its 30 minutes, and the job ran on its next choice
    first, last = done["attempts"][0], done["attempts"][-1]
    assert done["status"] == "SUCCEEDED", done
    assert (first["instance_type"], first["diagnosis"]["category"]) == (FIRST, "POOL_NOT_READY")
    evidence = first["diagnosis"]["evidence"]
    assert seconds_between(evidence["provisioning_since"], evidence["deadline"]) == PROVISION_TIMEOUT_SECONDS
    assert evidence["waited_seconds"] >= PROVISION_TIMEOUT_SECONDS and evidence["status"].startswith("CREATING")
    assert last["instance_type"] != FIRST and last["status"] == "SUCCEEDED"
