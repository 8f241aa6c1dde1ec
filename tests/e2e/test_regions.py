"""GPU capacity in other regions: a job the home region cannot serve runs in a capacity region that can, when its
request allows it, and fails at Batch's word naming every attempt when it does not; the plan says where each
candidate is and why a region gave none; the sweep, /health and /costs see every region.

One local cloud for the module: home us-east-1 without capacity for g5.xlarge and not selling g6e.xlarge at all,
us-west-2 with both (and an open reservation of g6.xlarge; its zones left to the world's defaults), eu-west-1 with no
G and VT quota and no g6.xlarge at all. A capacity region that cannot be read leaves the others listed."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from tests.e2e.conftest import RunningCloud, start_cloud, stop_cloud

pytestmark = pytest.mark.e2e
HOME, WEST, EU = "us-east-1", "us-west-2", "eu-west-1"
WORLD = {
    "region": HOME,
    "zones": [f"{HOME}a", f"{HOME}b"],
    "instance_types": {"g5.xlarge": {"capacity": "none"}, "g6e.xlarge": {"sold": False}},
    "regions": {
        # The home region's defaults: its first two zones
        WEST: {},
        EU: {"zones": [f"{EU}a", f"{EU}b"], "quotas": {"L-DB2E81BA": 0},
             "instance_types": {"g6.xlarge": {"offered": False}}},
    },
    "jobs": {"runtime_seconds": 1},
    "capacity_reservations": [{"instance_type": "g6.xlarge", "zone": f"{WEST}b", "region": WEST, "count": 2}],
}  # fmt: skip
JOB = {
    "name": "regional",
    "image": "nvidia/cuda:12.4.1-base-ubuntu22.04",
    "command": ["nvidia-smi", "-L"],
    "instance_types": ["g5.xlarge"],
    # Batch's verdict on the home attempt moves a job with a next candidate on at once; one without gives up here.
    "stuck_after_minutes": 0.1,
}
# A type every region of the world has capacity for (plans only).
PLANNED_TYPE = "g4dn.xlarge"
PLANNED = JOB | {"instance_types": [PLANNED_TYPE]}


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCloud]:
    running = start_cloud(tmp_path_factory.mktemp("regions"), WORLD)
    yield running
    stop_cloud(running)


@pytest.fixture(scope="module")
def moved(cloud: RunningCloud) -> dict[str, Any]:
    """The job allowed both US regions, once it ended (the module's tests read it)."""
    job_id = cloud.api.request("POST", "/jobs", JOB | {"regions": [HOME, WEST]}).body["job_id"]
    return cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"})


def test_a_job_the_home_region_cannot_serve_succeeds_in_the_capacity_region_that_can(moved: dict[str, Any]) -> None:
    # Given home has no g5.xlarge capacity and us-west-2 has, and a job allowed both / When it ran (fixture)
    # Then it succeeded in us-west-2, after its home attempt was diagnosed from Batch's words
    assert moved["status"] == "SUCCEEDED", moved
    assert moved["region"] == WEST
    home, west = moved["attempts"]
    assert (home["region"], home["diagnosis"]["category"]) == (HOME, "INSUFFICIENT_CAPACITY")
    assert (west["region"], west["status"]) == (WEST, "SUCCEEDED")
    # And the job's cost is the us-west-2 attempt's, and the timeline says where each attempt went
    assert west["cost"]["usd"] > 0 and moved["cost"]["usd"] == pytest.approx(west["cost"]["usd"])
    reasons = [entry["reason"] or "" for entry in moved["timeline"] if entry["status"] == "PROVISIONING"]
    assert f"({HOME})" in reasons[0]
    assert f"in {HOME} (INSUFFICIENT_CAPACITY)" in reasons[1] and f"({WEST})" in reasons[1]


def test_the_capacity_regions_pool_is_in_that_region_and_its_events_reached_home(
    cloud: RunningCloud, moved: dict[str, Any]
) -> None:
    # Given the job that ran in us-west-2 / When Batch is asked in each region
    queue = moved["attempts"][1]["job_queue"]
    west = boto3.client("batch", endpoint_url=cloud.aws_url, region_name=WEST)
    home = boto3.client("batch", endpoint_url=cloud.aws_url, region_name=HOME)
    # Then its pool is a us-west-2 queue, not a home one
    assert west.describe_job_queues(jobQueues=[queue])["jobQueues"][0]["jobQueueArn"].split(":")[3] == WEST
    assert home.describe_job_queues(jobQueues=[queue])["jobQueues"] == []
    # And the job's record followed Batch's us-west-2 events (forwarded to the home bus) to RUNNING and the end
    statuses = [entry["status"] for entry in moved["timeline"]]
    assert statuses[-3:] == ["STARTING", "RUNNING", "SUCCEEDED"]


def test_the_sweep_and_health_see_the_capacity_regions_pools(cloud: RunningCloud, moved: dict[str, Any]) -> None:
    # Given the job that ran in us-west-2 (its pool idle since) / When a sweep runs
    printed = cloud.cli("--json", "sweep")
    assert printed.returncode == 0, printed.stderr
    report = cloud.api.request("GET", "/health").body
    # Then the report covers every region, and names the us-west-2 pool with its region
    assert report["summary"]["regions"] == 3
    west_pool = moved["attempts"][1]["job_queue"]
    assert {(f["resource"], f["region"]) for f in report["findings"]} >= {(west_pool, WEST)}


def test_costs_group_by_region(cloud: RunningCloud, moved: dict[str, Any]) -> None:
    # Given the job that ran in us-west-2 / When costs are grouped by region
    report = cloud.api.request("GET", "/costs", query={"group_by": "region"}).body
    # Then us-west-2's group holds its attempt's cost, and says its region
    west = next(group for group in report["groups"] if group["key"] == WEST)
    assert west["region"] == WEST and west["usd"] == pytest.approx(moved["cost"]["usd"])
    printed = cloud.cli("costs", "--group-by", "region")
    assert printed.returncode == 0 and WEST in printed.stdout, printed.stderr


def test_restricted_to_the_home_region_the_same_job_fails_at_batchs_word_naming_every_attempt(
    cloud: RunningCloud,
) -> None:
    # Given the same job, allowed only the home region (which has no g5.xlarge capacity), retrying on purpose the
    # home offering the first job's attempt left in the memory of unavailable offerings
    job_id = cloud.api.request("POST", "/jobs", JOB | {"regions": [HOME], "ignore_unavailable": True}).body["job_id"]
    # When it ends
    job = cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"})
    # Then it failed, its error naming its one attempt and its region
    assert job["status"] == "FAILED"
    assert [attempt["region"] for attempt in job["attempts"]] == [HOME]
    assert f"1. g5.xlarge on-demand: INSUFFICIENT_CAPACITY ({HOME})" in job["error"]
    # And `status --explain` says which regions and markets were tried, and why each was left
    printed = cloud.cli("status", job_id, "--explain")
    tried = next(line for line in printed.stdout.splitlines() if line.startswith("tried"))
    assert f"on-demand g5.xlarge in {HOME} (INSUFFICIENT_CAPACITY)" in tried and f"regions allowed: {HOME}" in tried


def test_the_plan_shows_each_candidates_region_and_why_a_region_was_left_out(cloud: RunningCloud) -> None:
    # Given a job on a type home has capacity for, allowed the home region and eu-west-1 (no G and VT quota there)
    plan = cloud.api.request("POST", "/plan", PLANNED | {"regions": [HOME, EU]}).body
    # Then its one candidate is home's, and eu-west-1 is left out for its quota, us-west-2 for the allow-list
    assert [(c["instance_type"], c["region"]) for c in plan["candidates"]] == [(PLANNED_TYPE, HOME)]
    left_out = {region["region"]: region["left_out"] for region in plan["regions"]}
    assert left_out[HOME] is None
    assert left_out[EU].startswith("no quota (L-DB2E81BA is 0 vCPUs)")
    assert left_out[WEST] == "not in the request's regions"
    # And a type eu-west-1 does not offer leaves it out as not offered
    g6 = cloud.api.request("POST", "/plan", PLANNED | {"instance_types": ["g6.xlarge"], "regions": [EU, HOME]}).body
    assert {r["region"]: r["left_out"] for r in g6["regions"]}[EU] == "not offered in its zones"
    # And without regions the job plans in the home region only (the deployment sets no default_regions)
    default = cloud.api.request("POST", "/plan", PLANNED).body
    assert {r["region"] for r in default["regions"] if r["left_out"] is None} == {HOME}


def test_the_memory_of_the_home_shortage_leaves_the_same_type_in_the_other_region_a_candidate(
    cloud: RunningCloud, moved: dict[str, Any]
) -> None:
    # Given the moved job's home attempt remembered g5.xlarge on-demand as unavailable in home's zones
    # When the same job plans again, allowed both US regions
    plan = cloud.api.request("POST", "/plan", JOB | {"regions": [HOME, WEST]}).body
    # Then us-west-2's g5.xlarge is its candidate, and home is left out as recently unavailable
    assert [(c["instance_type"], c["region"]) for c in plan["candidates"]] == [("g5.xlarge", WEST)]
    assert {r["region"]: r["left_out"] for r in plan["regions"]}[HOME] == "recently unavailable"


def test_a_reservation_the_account_holds_in_a_capacity_region_is_planned_first_there(cloud: RunningCloud) -> None:
    # When a g6.xlarge job allowed both US regions is planned, and the same restricted to home
    both = cloud.api.request("POST", "/plan", PLANNED | {"instance_types": ["g6.xlarge"], "regions": [HOME, WEST]})
    home = cloud.api.request("POST", "/plan", PLANNED | {"instance_types": ["g6.xlarge"], "regions": [HOME]})

    # Then us-west-2's reservation is the first choice, in its region and zone; home has none to offer
    first = both.body["candidates"][0]
    assert (first["region"], first["zones"], first["reservation"][:3], first["marginal_hourly_usd"]) == (
        WEST,
        [f"{WEST}b"],
        "cr-",
        0,
    ), first
    assert [c for c in home.body["candidates"] if c.get("reservation")] == []
    # And the account's reservations, listed, name it with its region
    listed = cloud.api.request("GET", "/reservations").body["reservations"]
    assert [(r["reservation_id"], r["region"]) for r in listed] == [(first["reservation"], WEST)]


def test_a_job_runs_in_the_reservation_the_account_holds_in_a_capacity_region(cloud: RunningCloud) -> None:
    # When a g6.xlarge job allowed only us-west-2 runs
    job_id = cloud.api.request("POST", "/jobs", PLANNED | {"instance_types": ["g6.xlarge"], "regions": [WEST]})
    ended = cloud.wait_for(job_id.body["job_id"], {"SUCCEEDED", "FAILED"})

    # Then it ran in the reservation, in us-west-2, its pool in that region's Batch, and EC2 there says so
    assert ended["status"] == "SUCCEEDED", ended.get("error")
    [attempt] = ended["attempts"]
    assert (attempt["region"], (attempt["reservation"] or "")[:3]) == (WEST, "cr-"), attempt
    assert attempt["cost"]["pricing"].startswith(f"On-Demand Capacity Reservation {attempt['reservation']}")
    queues = boto3.client("batch", region_name=WEST, endpoint_url=cloud.aws_url).describe_job_queues()
    assert attempt["job_queue"] in {q["jobQueueName"] for q in queues["jobQueues"]}


def test_the_cli_plan_shows_the_region_column_and_the_regions_left_out(cloud: RunningCloud) -> None:
    # Given / When `gpupilot plan` with two --region options
    printed = cloud.cli(
        "plan", "--name", "regional", "--image", JOB["image"], "--instance-type", PLANNED_TYPE,
        "--region", HOME, "--region", WEST, "--", "nvidia-smi",
    )  # fmt: skip
    # Then each candidate's row names its region, and eu-west-1 is said left out of the allow-list
    assert printed.returncode == 0, printed.stderr
    header, *rows = printed.stdout.splitlines()
    assert "region" in header.split()
    assert {WEST, HOME} <= {word for row in rows[:3] for word in row.split()}
    assert f"region {EU} left out: not in the request's regions" in printed.stdout


def test_a_region_the_deployment_has_no_capacity_in_is_refused_naming_regions(cloud: RunningCloud) -> None:
    # Given / When a job names a region the deployment has no stack in
    answer = cloud.api.request("POST", "/plan", JOB | {"regions": ["ap-south-1"]})
    # Then it is a 400 naming the field and the deployment's regions
    assert answer.status == 400
    assert answer.body["field"] == "regions" and all(r in answer.body["message"] for r in (HOME, WEST, EU))
    assert json.dumps(answer.body)  # a JSON body


def test_a_capacity_region_given_without_zones_takes_its_first_two(cloud: RunningCloud) -> None:
    # Given us-west-2 described in the world without its zones / When a job allowed only there is planned
    plan = cloud.api.request("POST", "/plan", PLANNED | {"regions": [WEST]}).body
    # Then its candidate may run in the region's first two zones, as home's default does
    [candidate] = plan["candidates"]
    assert (candidate["region"], candidate["zones"]) == (WEST, [f"{WEST}a", f"{WEST}b"])


def test_a_type_sold_only_in_a_capacity_region_is_planned_and_runs_there(cloud: RunningCloud) -> None:
    # Given g6e.xlarge, which EC2 sells in us-west-2 and not at home (home's DescribeInstanceTypes leaves it out)
    request = PLANNED | {"instance_types": ["g6e.xlarge"], "regions": [HOME, WEST]}

    # When a job of it, allowed both regions, is planned and run
    plan = cloud.api.request("POST", "/plan", request).body
    job_id = cloud.api.request("POST", "/jobs", request).body["job_id"]
    ended = cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"})

    # Then its candidate is us-west-2's, home says why it gave none, and the job succeeded there
    assert [(c["instance_type"], c["region"]) for c in plan["candidates"]] == [("g6e.xlarge", WEST)], plan
    home = [r for r in plan["rejected"] if r["region"] == HOME]
    assert [r["reason"] for r in home] == [f"not offered in {HOME}: EC2 does not sell it there"], plan["rejected"]
    assert (ended["status"], ended["region"]) == ("SUCCEEDED", WEST), ended.get("error")


def test_reservations_leave_out_a_capacity_region_that_cannot_be_read_and_list_the_others(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a deployment whose eu-west-1 stack is gone (the parameter naming its network deleted), before anything
    # read it
    fresh = cloud_factory({"regions": {WEST: {}, EU: {}}, "capacity_reservations": WORLD["capacity_reservations"]})
    ssm = boto3.client("ssm", endpoint_url=fresh.aws_url, region_name=EU)
    for parameter in ssm.describe_parameters()["Parameters"]:
        ssm.delete_parameter(Name=parameter["Name"])

    # When the account's reservations, and the Capacity Blocks on offer, are listed
    listed = fresh.api.request("GET", "/reservations")
    printed = fresh.cli("reservations")
    offered = fresh.api.request(
        "GET", "/reservations/offerings", query={"instance_type": "p5.48xlarge", "count": 1, "days": 1}
    )

    # Then each answers with the regions it could read, eu-west-1 left out with AWS's words, as the plan leaves it
    assert listed.status == 200, listed.body
    assert [r["region"] for r in listed.body["reservations"]] == [WEST]
    assert listed.body["left_out"][EU].startswith("could not be read (ParameterNotFound"), listed.body
    assert printed.returncode == 0 and f"region {EU} left out: could not be read" in printed.stdout, printed.stderr
    assert offered.status == 200 and set(offered.body["left_out"]) == {EU}, offered.body
