"""Pool lifecycle on the local cloud: a new launch template version moves new jobs to a new pool version and
the sweep deletes the old one; idle pools retire; Batch's 50 compute environments per region hold. The local
cloud deletes as Batch does: DELETING for a moment, then DELETED and still shown for a while, its name taken."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from gpupilot.localcloud.timeline import TIMELINE_OVERRIDES
from tests.e2e.conftest import RunningCloud

pytestmark = pytest.mark.e2e
JOB = {"name": "pooled", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"]}
# Longer than the local cloud's claim grace (a pool claimed this recently is never retired): how far a test moves the
# local cloud's clock past a claim.
PAST_CLAIM_GRACE = float(TIMELINE_OVERRIDES["health_sweep"]["GPUPILOT_POOL_CLAIM_GRACE_SECONDS"]) + 0.5


def aws(cloud: RunningCloud, service: str) -> Any:
    return boto3.client(
        service, endpoint_url=cloud.aws_url, region_name="us-east-1",
        aws_access_key_id="testing", aws_secret_access_key="testing",
    )  # fmt: skip


def run(cloud: RunningCloud, **request: Any) -> dict[str, Any]:
    job_id = cloud.api.request("POST", "/jobs", JOB | request).body["job_id"]
    return cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"})


def pool_of(job: dict[str, Any]) -> str:
    return str(job["attempts"][-1]["job_queue"])


def sweep(cloud: RunningCloud) -> list[dict[str, Any]]:
    swept = json.loads(cloud.cli("--json", "sweep").stdout)
    assert swept["status"] == "COMPLETE", swept
    return list(swept["findings"])


def environments(cloud: RunningCloud) -> dict[str, dict[str, Any]]:
    """Every compute environment Batch shows, DELETED ones included."""
    found = aws(cloud, "batch").describe_compute_environments()["computeEnvironments"]
    return {e["computeEnvironmentName"]: e for e in found}


def live_environments(cloud: RunningCloud) -> dict[str, dict[str, Any]]:
    """The compute environments Batch has not deleted (what its limit counts)."""
    return {name: e for name, e in environments(cloud).items() if e["status"] != "DELETED"}


def sweep_until_retired(cloud: RunningCloud, pool: str) -> list[dict[str, Any]]:
    """Sweep until a sweep reports the pool's retirement done (Batch deletes its queue, then its compute
    environment, each taking a moment); every POOL_RETIRING finding about it, in order."""
    seen: list[dict[str, Any]] = []

    def retired() -> bool:
        seen.extend(f for f in sweep(cloud) if f["kind"] == "POOL_RETIRING" and f["resource"] == pool)
        return bool(seen) and seen[-1]["evidence"]["step"] == "done"

    cloud.until(f"pool {pool} retired", retired, every=0.5)
    return seen


def test_a_new_launch_template_version_moves_new_jobs_to_a_new_pool_and_the_old_is_deleted(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a job that ran in a pool built on the launch template's version 1
    cloud = cloud_factory({"jobs": {"runtime_seconds": 1}})
    first = run(cloud, instance_types=["g4dn.xlarge"])
    old = pool_of(first)
    assert environments(cloud)[old]["computeResources"]["launchTemplate"]["version"] == "1"

    # When the launch template gets a new version (new user data, a new AMI: a redeploy) and a job follows
    ec2 = aws(cloud, "ec2")
    [template] = ec2.describe_launch_templates()["LaunchTemplates"]
    ec2.create_launch_template_version(
        LaunchTemplateName=template["LaunchTemplateName"], SourceVersion="1", LaunchTemplateData={}
    )
    second = run(cloud, instance_types=["g4dn.xlarge"])

    # Then the new job ran in a new version of the same pool, built on version 2
    new = pool_of(second)
    assert (first["status"], second["status"]) == ("SUCCEEDED", "SUCCEEDED")
    assert new != old and new.rsplit("-", 1)[0] == old.rsplit("-", 1)[0]
    assert environments(cloud)[new]["computeResources"]["launchTemplate"]["version"] == "2"

    # And the sweeps drain and delete the old version (queue disabled, deleted; compute environment too), waiting
    # as Batch deletes each; Batch then shows it DELETED for a while
    cloud.advance(PAST_CLAIM_GRACE)
    retired = sweep_until_retired(cloud, old)
    assert {f["evidence"]["reason"] for f in retired} == {"outdated"}
    assert [f["evidence"]["step"] for f in retired][-2:] == ["wait", "done"]
    assert environments(cloud)[old]["status"] == "DELETED" and new in live_environments(cloud)
    queues = {q["jobQueueName"]: q for q in aws(cloud, "batch").describe_job_queues()["jobQueues"]}
    assert queues[old]["status"] == "DELETED" and queues[new]["state"] == "ENABLED"


def test_a_pool_idle_for_pool_idle_hours_is_retired_and_recreated_by_the_next_job(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a pool that ran a job, and an operator setting pool_idle_hours to about a second
    cloud = cloud_factory({"jobs": {"runtime_seconds": 1}})
    pool = pool_of(run(cloud))
    awslambda = aws(cloud, "lambda")
    [sweeper] = [
        f for f in awslambda.list_functions()["Functions"] if f["Handler"] == "functions.health_sweep.handler.handler"
    ]
    variables = sweeper["Environment"]["Variables"] | TIMELINE_OVERRIDES["health_sweep"]
    awslambda.update_function_configuration(
        FunctionName=sweeper["FunctionName"],
        Environment={"Variables": variables | {"GPUPILOT_POOL_IDLE_HOURS": "0.0003"}},
    )

    # When a sweep sees it idle, and later ones find it idle past the setting
    assert [f["resource"] for f in sweep(cloud) if f["kind"] == "IDLE_POOL"] == [pool]
    cloud.advance(PAST_CLAIM_GRACE)
    retired = sweep_until_retired(cloud, pool)

    # Then it was retired, every step taken, and Batch shows it DELETED (its name still taken)
    assert {f["evidence"]["reason"] for f in retired} == {"idle"}
    assert environments(cloud)[pool]["status"] == "DELETED"

    # And the next job that needs it gets the pool's next generation at once, under a name Batch does not hold,
    # and runs
    again = run(cloud)
    assert (again["status"], pool_of(again)) == ("SUCCEEDED", f"{pool}-g2")
    assert environments(cloud)[pool]["status"] == "DELETED"


def test_at_batch_s_limit_the_least_recently_used_idle_pool_makes_room_and_without_one_the_job_says_why(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a GPU Pilot pool the sweep has seen idle, and a region filled to Batch's 50 compute environments
    cloud = cloud_factory({"jobs": {"runtime_seconds": 1}})
    idle = pool_of(run(cloud, instance_types=["g4dn.xlarge"]))
    sweep(cloud)
    batch = aws(cloud, "batch")
    for index in range(50 - len(environments(cloud))):
        batch.create_compute_environment(computeEnvironmentName=f"someone-else-{index}", type="UNMANAGED")
    assert len(environments(cloud)) == 50
    cloud.advance(PAST_CLAIM_GRACE)

    # When a job needs a pool that does not exist yet
    made_room = run(cloud, instance_types=["g5.xlarge"])

    # Then the idle pool was retired to make room (Batch shows it DELETED, which no limit counts), and the job ran
    # in its new pool; still 50
    assert made_room["status"] == "SUCCEEDED"
    assert idle not in live_environments(cloud) and pool_of(made_room) in live_environments(cloud)
    assert len(live_environments(cloud)) == 50

    # And when no pool can be retired (the only one was just used), a job needing a new pool fails saying why
    stuck = run(cloud, instance_types=["g6.xlarge"])
    assert stuck["status"] == "FAILED"
    [attempt] = stuck["attempts"]
    assert (attempt["status"], attempt["diagnosis"]["category"]) == ("NOT_SUBMITTED", "POOL_LIMIT")
    assert "Batch allows 50" in attempt["diagnosis"]["reason"]
    shown = cloud.cli("status", stuck["job_id"])
    assert "POOL_LIMIT" in shown.stdout
    assert len(live_environments(cloud)) == 50
