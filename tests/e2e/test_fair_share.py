"""Teams share a pool by their weights, through the local cloud: two teams of weights 3 and 1 wait for one pool of
four instances, each with more jobs than fit; once the pool frees, Batch's fair-share scheduling starts three of the
first four jobs from the heavier team and one from the lighter (which is not starved), though the lighter team's jobs
were all submitted first. Each job reaches Batch under its team's share identifier."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import urllib3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from gpupilot.localcloud.template import load_region_templates
from gpupilot.localcloud.world import World
from tests.e2e.conftest import PATIENCE_SECONDS, RunningCloud, start_cloud, stop_cloud

pytestmark = pytest.mark.e2e
ACCOUNT = "123456789012"
# One GPU type, on demand, one job per instance; never diagnosed stuck while it waits for the pool.
JOB = {"name": "shared", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"],
       "instance_types": ["g4dn.xlarge"], "capacity": "on-demand", "stuck_after_minutes": 600}  # fmt: skip
SLOTS = 4  # the account's G vCPU quota holds four g4dn.xlarge (4 vCPUs each): the pool's whole capacity
PER_TEAM = 6


def identity(name: str, key: str) -> dict[str, str]:
    return {"arn": f"arn:aws:iam::{ACCOUNT}:user/{name}", "access_key_id": key,
            "secret_access_key": f"{name}-secret-key-000000000000"}  # fmt: skip


IDENTITIES = {
    "hana": identity("hana", "AKIAHANA000000000001"),
    "leo": identity("leo", "AKIALEO0000000000001"),
    "root": identity("root-admin", "AKIAROOT000000000001"),
}
TEAMS = {
    "admins": [f"arn:aws:iam::{ACCOUNT}:user/root-admin"],
    "teams": {
        "heavy": {"members": [f"arn:aws:iam::{ACCOUNT}:user/hana"], "weight": 3},
        "light": {"members": [f"arn:aws:iam::{ACCOUNT}:user/leo"], "weight": 1},
    },
}
# Jobs run for an hour: none ends during the test, so the first jobs started after the pool frees are all there are.
WORLD: dict[str, Any] = {"jobs": {"runtime_seconds": 3600}, "quotas": {"L-DB2E81BA": SLOTS * 4}, "teams": TEAMS,
                         "identities": IDENTITIES}  # fmt: skip
HTTP = urllib3.PoolManager(maxsize=8, timeout=urllib3.Timeout(connect=10, read=120))
STARTED = {"STARTING", "RUNNING"}


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCloud]:
    world = World.model_validate(WORLD)
    load_region_templates(world.region, [], world.deployment_context())
    running = start_cloud(tmp_path_factory.mktemp("fair-share"), WORLD)
    yield running
    stop_cloud(running)


def call(cloud: RunningCloud, who: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """One request signed as `who`, as the CLI signs it."""
    data = json.dumps(body).encode() if body is not None else None
    keys = IDENTITIES[who]
    request = AWSRequest(
        method=method, url=cloud.api_url + path, data=data, headers={"Content-Type": "application/json"}
    )
    SigV4Auth(Credentials(keys["access_key_id"], keys["secret_access_key"]), "execute-api", "us-east-1").add_auth(
        request
    )
    answer = HTTP.request(method, cloud.api_url + path, body=data, headers=dict(request.headers.items()), retries=False)
    return answer.status, json.loads(answer.data) if answer.data else None


def submit(cloud: RunningCloud, who: str, count: int) -> list[str]:
    ids = []
    for _ in range(count):
        status, answer = call(cloud, who, "POST", "/jobs", JOB)
        assert status == 202, answer
        ids.append(answer["job_id"])
    return ids


def statuses(cloud: RunningCloud, ids: list[str]) -> dict[str, dict[str, Any]]:
    jobs = {}
    for job_id in ids:
        status, job = call(cloud, "root", "GET", f"/jobs/{job_id}")
        assert status == 200, job
        jobs[job_id] = job
    return jobs


def until(what: str, found: Any, timeout: float = PATIENCE_SECONDS) -> Any:
    deadline = time.monotonic() + timeout
    while not (answer := found()):
        assert time.monotonic() < deadline, f"{what}: not within {timeout:.0f} s"
        time.sleep(0.5)
    return answer


def test_two_teams_weighted_three_to_one_start_jobs_in_that_proportion(cloud: RunningCloud) -> None:
    # Given the pool's four instances all held by an admin's jobs
    blockers = submit(cloud, "root", SLOTS)
    until("the admin's jobs hold the pool", lambda: all(
        j["status"] == "RUNNING" for j in statuses(cloud, blockers).values()))  # fmt: skip
    # And the lighter team's jobs, then the heavier team's, all waiting for it
    light = submit(cloud, "leo", PER_TEAM)
    heavy = submit(cloud, "hana", PER_TEAM)
    sharers = light + heavy
    until("every team job waits in the pool", lambda: all(
        j["status"] == "RUNNABLE" for j in statuses(cloud, sharers).values()))  # fmt: skip
    batch = boto3.client("batch", endpoint_url=cloud.aws_url, region_name="us-east-1",
                         aws_access_key_id="testing", aws_secret_access_key="testing")  # fmt: skip
    described = statuses(cloud, sharers)
    batch_ids = {job_id: job["attempts"][-1]["batch_job_id"] for job_id, job in described.items()}
    shares = {j["jobId"]: j.get("shareIdentifier") for j in batch.describe_jobs(jobs=list(batch_ids.values()))["jobs"]}

    # When the admin's jobs are cancelled, freeing the pool
    for job_id in blockers:
        assert call(cloud, "root", "DELETE", f"/jobs/{job_id}")[0] == 202
    started = until(f"{SLOTS} team jobs start", lambda: [
        job_id for job_id, job in statuses(cloud, sharers).items() if job["status"] in STARTED
    ] if sum(j["status"] in STARTED for j in statuses(cloud, sharers).values()) >= SLOTS else None)  # fmt: skip

    # Then each job reached Batch under its team's share
    assert [shares[batch_ids[j]] for j in light] == ["light"] * PER_TEAM
    assert [shares[batch_ids[j]] for j in heavy] == ["heavy"] * PER_TEAM
    # And of the first four started (no job ends for an hour: there are no others), three are the heavier team's,
    # though all of the lighter team's were submitted first, and the lighter team is not starved
    assert len(started) == SLOTS, started
    assert sum(j in heavy for j in started) == 3, {j: "heavy" if j in heavy else "light" for j in started}
    assert sum(j in light for j in started) == 1
