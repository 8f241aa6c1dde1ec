"""Pick a GPU that will actually start, on the local cloud: what could never start is refused at once, spot
falls back to on-demand, and a job nothing can serve fails within its bound having tried several families."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable

import pytest

from tests.e2e.conftest import RunningCloud

pytestmark = pytest.mark.e2e
JOB = {"name": "pick", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"]}


def test_an_account_whose_gpu_quota_is_zero_is_told_at_once_and_how_to_raise_it(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a new account: no on-demand GPU vCPUs at all
    cloud = cloud_factory({"quotas": {"L-DB2E81BA": 0, "L-417A185B": 0}})
    # When a job is submitted / Then it is a 400 naming the field and every quota, and nothing runs
    answer = cloud.api.request("POST", "/jobs", JOB)
    assert (answer.status, answer.body["error"], answer.body["field"]) == (400, "NoCandidate", "capacity")
    reasons = [r["reason"] for r in answer.body["rejected"] if r["field"] == "capacity"]
    assert reasons and all("request-service-quota-increase" in r for r in reasons)
    assert cloud.api.request("GET", "/jobs").body["jobs"] == []
    # And the CLI says it in one line and exits 2
    printed = cloud.cli("submit", "--name", "pick", "--image", JOB["image"], "--", "nvidia-smi", "-L")
    assert printed.returncode == 2 and "quota" in printed.stderr and len(printed.stderr.strip().splitlines()) == 1


def test_spot_first_falls_back_to_on_demand_of_the_same_type_when_spot_has_no_capacity(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given no spot capacity for the T4, poor spot placement for the larger T4s, and a spot-first job that may
    # wait 3 seconds per attempt (three types: AWS scores one or two types low whatever the capacity)
    t4s = ["g4dn.xlarge", "g4dn.2xlarge", "g4dn.4xlarge"]
    spot = {"g4dn.xlarge": {"capacity": "none"}, "g4dn.2xlarge": {"placement_score": 2},
            "g4dn.4xlarge": {"placement_score": 2}}  # fmt: skip
    cloud = cloud_factory({"spot": spot, "jobs": {"runtime_seconds": 1}})
    body = JOB | {"capacity": "spot-first", "instance_types": t4s, "stuck_after_minutes": 0.05}
    # When it is planned, then submitted
    plan = cloud.api.request("POST", "/plan", body).body
    job_id = cloud.api.request("POST", "/jobs", body).body["job_id"]
    job = cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"})
    # Then spot came first (and its poor placement score was said), then on-demand of the same type ran it
    assert [(c["instance_type"], c["capacity"]) for c in plan["candidates"][:2]] == [
        ("g4dn.xlarge", "spot"),
        ("g4dn.xlarge", "on-demand"),
    ]
    assert any("placement score 2/10" in w for w in plan["warnings"])
    first, last = job["attempts"][0], job["attempts"][-1]
    assert job["status"] == "SUCCEEDED", job
    assert (first["capacity"], first["diagnosis"]["category"]) == ("spot", "INSUFFICIENT_CAPACITY")
    assert (last["capacity"], last["instance_type"]) == ("on-demand", "g4dn.xlarge")


def test_a_job_nothing_can_serve_fails_within_its_bound_after_trying_several_families(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given no capacity for any of the job's types, in three families
    types = ["g4dn.xlarge", "g4dn.2xlarge", "g5.xlarge", "g6.xlarge"]
    cloud = cloud_factory({"instance_types": {t: {"capacity": "none"} for t in types}})
    body = JOB | {"instance_types": types, "stuck_after_minutes": 0.05, "max_attempts": 3, "give_up_after_minutes": 1}
    # When submitted
    job_id = cloud.api.request("POST", "/jobs", body).body["job_id"]
    job = cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"})
    # Then it failed after at most 3 attempts, no two in a row of one family, and says so in one place
    attempts = job["attempts"]
    families = [a["instance_type"].split(".")[0] for a in attempts]
    assert job["status"] == "FAILED" and 2 <= len(attempts) <= 3, job
    assert len(set(families)) >= 2 and all(a != b for a, b in itertools.pairwise(families))
    for attempt in attempts:
        assert attempt["instance_type"] in job["error"]
    assert "INSUFFICIENT_CAPACITY" in job["error"]
    printed = cloud.cli("--json", "status", job_id)
    assert json.loads(printed.stdout)["status"] == "FAILED"


def test_a_job_limited_to_a_zone_runs_in_a_pool_on_that_zones_subnets_only(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    import boto3

    cloud = cloud_factory({"jobs": {"runtime_seconds": 1}})
    job_id = cloud.api.request("POST", "/jobs", JOB | {"zones": ["us-east-1b"]}).body["job_id"]
    job = cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"})
    assert job["status"] == "SUCCEEDED", job
    pool = job["attempts"][-1]["job_queue"]
    aws = {"endpoint_url": cloud.aws_url, "region_name": "us-east-1", "aws_access_key_id": "local",
           "aws_secret_access_key": "local"}  # fmt: skip
    [environment] = boto3.client("batch", **aws).describe_compute_environments(computeEnvironments=[pool])[
        "computeEnvironments"
    ]
    subnets = environment["computeResources"]["subnets"]
    zones = {s["AvailabilityZone"] for s in boto3.client("ec2", **aws).describe_subnets(SubnetIds=subnets)["Subnets"]}
    assert "-1b-" in pool and zones == {"us-east-1b"}


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"gpu_models": ["H9000"]}, "gpu_models", "known: "),
        ({"instance_types": ["m5.large"]}, "instance_types", "not an NVIDIA GPU instance type"),
        ({"min_gpu_memory_gib": 1000}, "min_gpu_memory_gib", "GiB per GPU, request needs 1000"),
        ({"max_hourly_usd": 0.01}, "max_hourly_usd", "exceeds max_hourly_usd $0.01"),
        ({"zones": ["us-east-1f"]}, "zones", "not a zone of this deployment"),
        ({"zones": []}, "zones", "at least 1 item"),
        ({"gpus": 8, "instance_types": ["g5.xlarge"]}, "gpus", "1 GPU, request needs 8"),
    ],
)
def test_a_request_that_could_never_start_is_refused_at_once_naming_the_field(
    cloud: RunningCloud, change: dict[str, object], field: str, words: str
) -> None:
    before = len(cloud.api.request("GET", "/jobs", query={"limit": 100}).body["jobs"])
    answer = cloud.api.request("POST", "/jobs", JOB | change)
    assert (answer.status, answer.body["field"]) == (400, field), answer.body
    assert words in answer.body["message"] or any(words in r["reason"] for r in answer.body.get("rejected") or [])
    assert len(cloud.api.request("GET", "/jobs", query={"limit": 100}).body["jobs"]) == before


def test_with_no_g_and_vt_quota_a_job_is_refused_beyond_its_price_band_and_runs_once_it_widens_it(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a new account's world: no on-demand G and VT vCPUs (the P quota left as AWS gives it)
    cloud = cloud_factory({"quotas": {"L-DB2E81BA": 0}, "jobs": {"runtime_seconds": 1}})

    # When a 1-GPU job with no other constraint is planned / Then its first choice is the cheapest P instance, and
    # the plan says first, loudly, what blocks the cheap types and how many times more it costs
    plan = cloud.api.request("POST", "/plan", JOB).body
    first = plan["candidates"][0]
    assert (first["instance_type"], first["gpus"]) == ("p5.4xlarge", 1)
    assert plan["warnings"][0].startswith("G and VT types blocked by quota L-DB2E81BA (0 vCPUs): first choice "
                                          "p5.4xlarge costs 13x g4dn.xlarge")  # fmt: skip
    assert plan["outside_band"]["refused"] is True
    # And a submit is refused on price_band, the smallest quota increase listed first; nothing starts
    refused = cloud.api.request("POST", "/jobs", JOB)
    assert (refused.status, refused.body["error"], refused.body["field"]) == (400, "NoCandidate", "price_band")
    assert "Send price_band 13.1 or more" in refused.body["message"]
    assert refused.body["rejected"][0]["instance_type"] == "g4dn.xlarge"
    assert "--quota-code L-DB2E81BA" in refused.body["rejected"][0]["reason"]
    assert cloud.api.request("GET", "/jobs").body["jobs"] == []
    printed = cloud.cli("submit", "--name", "pick", "--image", JOB["image"], "--", "nvidia-smi", "-L")
    assert printed.returncode == 2 and "price_band" in printed.stderr
    # And with the band widened, it runs there, told what it costs
    accepted = cloud.api.request("POST", "/jobs", JOB | {"price_band": 14})
    assert accepted.status == 202 and "13x g4dn.xlarge" in accepted.body["warnings"][0]
    job = cloud.wait_for(accepted.body["job_id"], {"SUCCEEDED", "FAILED"})
    assert (job["status"], job["instance_type"]) == ("SUCCEEDED", "p5.4xlarge")


def test_a_one_gpu_job_needing_40_gib_per_gpu_is_planned_on_the_cheapest_instance_with_no_eight_gpu_fallback(
    cloud: RunningCloud,
) -> None:
    # When a 1-GPU job needing 40 GiB per GPU is planned in the default world
    plan = cloud.api.request("POST", "/plan", JOB | {"min_gpu_memory_gib": 40}).body

    # Then it starts on the cheapest instance, the g6e.xlarge; every priced fallback is a 1-GPU type within 3x of
    # it; the 8-GPU types are left out naming price_band; the order says why in words
    first = plan["candidates"][0]
    assert (first["instance_type"], first["price_ratio"]) == ("g6e.xlarge", 1.0)
    assert first["why"].startswith("$1.861/h for this job, the cheapest")
    priced = [c for c in plan["candidates"] if c["hourly_usd"] is not None]
    assert all(c["gpus"] == 1 and c["price_ratio"] <= 3 for c in priced)
    beyond = {r["instance_type"] for r in plan["rejected"] if r["field"] == "price_band"}
    assert {"p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge"} <= beyond
