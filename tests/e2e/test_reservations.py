"""Capacity the account already holds, through the local cloud: an active reservation runs a job at no marginal
price, on a copy of the stack's launch template, and its idle hours are waste billed to its owner; a reservation
GPU Pilot cannot launch into (another platform, dedicated tenancy) is neither used nor charged; a Capacity Block that
has not begun is waited for, and a job too long for it (every try Batch may make of it) is not placed on it; Capacity
Blocks on offer are listed, and buying one is refused without the deployment's ceiling, without --yes, and above
--max-upfront-usd or the ceiling, and bought, in its region, for the days it was listed for."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from functions.shared.domain.core.clock import seconds_between
from tests.e2e.conftest import RunningCloud, start_cloud, stop_cloud

pytestmark = pytest.mark.e2e
JOB = {"name": "reserved", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"]}
# The block begins two hours into the local cloud's time: no test waits for it, a test that needs it begun moves the
# clock there (and no test can see it begin by itself, whatever the order the tests run in, or the machine's load).
BLOCK_STARTS_IN_SECONDS = 7200
WORLD: dict[str, Any] = {
    "jobs": {"runtime_seconds": 1},
    "capacity_reservations": [
        # An On-Demand Capacity Reservation of 2 g5.xlarge, active, open
        {"instance_type": "g5.xlarge", "zone": "us-east-1a", "count": 2, "starts_in_seconds": 0, "hours": 24,
         "capacity_block": False, "match": "open"},
        # A two-hour Capacity Block of g6e.xlarge that begins later (its instances go 30 min before its end)
        {"instance_type": "g6e.xlarge", "zone": "us-east-1a", "count": 1, "starts_in_seconds": BLOCK_STARTS_IN_SECONDS,
         "hours": 2, "capacity_block": True, "upfront_usd": 40.0},
        # Open reservations GPU Pilot cannot launch into: Windows instances, and dedicated hardware
        {"instance_type": "g4dn.xlarge", "zone": "us-east-1a", "count": 1, "platform": "Windows"},
        {"instance_type": "g4dn.2xlarge", "zone": "us-east-1a", "count": 1, "tenancy": "dedicated"},
    ],
    "capacity_block_offerings": [
        {"instance_type": "p5.48xlarge", "count": 2, "hours": 72, "starts_in_seconds": 86400, "upfront_usd": 94000},
    ],
}  # fmt: skip


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCloud]:
    running = start_cloud(tmp_path_factory.mktemp("reservations"), WORLD)
    yield running
    stop_cloud(running)


def reservations(cloud: RunningCloud) -> dict[str, dict[str, Any]]:
    """The local cloud's reservations as EC2 describes them, by instance type."""
    ec2 = boto3.client("ec2", endpoint_url=cloud.aws_url, region_name="us-east-1")
    return {r["InstanceType"]: r for r in ec2.describe_capacity_reservations()["CapacityReservations"]}


def test_a_job_for_a_scheduled_block_waits_with_the_reason_and_starts_when_the_block_starts(
    cloud: RunningCloud,
) -> None:
    # Given a Capacity Block that has not begun
    block = reservations(cloud)["g6e.xlarge"]
    assert block["State"] == "scheduled", block

    # When a job that fits in it asks for it
    request = JOB | {"reservation": block["CapacityReservationId"], "timeout_minutes": 10}
    job_id = cloud.api.request("POST", "/jobs", request).body["job_id"]
    waiting = cloud.wait_for(job_id, {"PROVISIONING", "SUCCEEDED", "FAILED"})
    explained = json.loads(cloud.cli("--json", "status", job_id, "--explain").stdout)

    # Then it waits, saying for what, in status and --explain
    reason = f"waiting for Capacity Block {block['CapacityReservationId']} starting at"
    assert waiting["status"] == "PROVISIONING", waiting
    assert reason in json.dumps(waiting["timeline"][-1]), waiting["timeline"]
    assert reason in explained["explanation"]["reason"]
    assert explained["explanation"]["category"] == "WAITING_FOR_RESERVATION"
    assert cloud.api.request("GET", f"/jobs/{job_id}").body["status"] == "PROVISIONING"
    # And once the block begins (the local cloud's clock moved to its start) it runs there
    # (EC2 states the start in whole seconds: the moment after it is surely the block's)
    cloud.advance(seconds_between(cloud.clock()["now"], block["StartDate"].isoformat()) + 1)
    assert reservations(cloud)["g6e.xlarge"]["State"] == "active"
    done = cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"})
    assert done["status"] == "SUCCEEDED", done
    assert [a["reservation"] for a in done["attempts"]] == [block["CapacityReservationId"]]
    # And it was priced at the block's fee over its instance-hours ($40 for one instance for two hours)
    assert done["attempts"][0]["cost"]["hourly_usd"] == 20.0
    assert reservations(cloud)["g6e.xlarge"]["State"] == "active"


def test_a_job_that_fits_a_reservation_and_free_on_demand_runs_on_the_reservation_at_zero_marginal_price(
    cloud: RunningCloud,
) -> None:
    # Given an active reservation for g5.xlarge, and g6.xlarge free on-demand
    held = reservations(cloud)["g5.xlarge"]["CapacityReservationId"]
    request = JOB | {"instance_types": ["g6.xlarge", "g5.xlarge"]}

    # When the job is planned, then submitted
    plan = cloud.api.request("POST", "/plan", request).body
    job_id = cloud.api.request("POST", "/jobs", request).body["job_id"]
    job = cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"})

    # Then the plan puts the reservation first, at its rate and zero marginal price, and says so
    first = plan["candidates"][0]
    assert (first["instance_type"], first["reservation"], first["marginal_hourly_usd"]) == ("g5.xlarge", held, 0.0)
    assert f"reserved: {held}" in first["why"]
    # And the job ran on it: its attempt names the reservation, and EC2 shows its instance in it
    [attempt] = job["attempts"]
    assert job["status"] == "SUCCEEDED", job
    assert (attempt["instance_type"], attempt["reservation"]) == ("g5.xlarge", held)
    # And it was priced at the reservation's rate (an ODCR: the on-demand rate)
    assert attempt["cost"]["pricing"].startswith(f"On-Demand Capacity Reservation {held}, billed at the on-demand")
    ec2 = boto3.client("ec2", endpoint_url=cloud.aws_url, region_name="us-east-1")
    launched = [i for r in ec2.describe_instances()["Reservations"] for i in r["Instances"]]
    assert [i.get("CapacityReservationId") for i in launched if i["InstanceType"] == "g5.xlarge"] == [held]


def test_the_reservation_launch_template_is_the_stacks_targeting_the_reservation(cloud: RunningCloud) -> None:
    # Given the job of the test before ran on the ODCR (EC2 describes a launch template version with fields its
    # CreateLaunchTemplate refuses: MetadataOptions.State, Operator)
    held = reservations(cloud)["g5.xlarge"]["CapacityReservationId"]
    ec2 = boto3.client("ec2", endpoint_url=cloud.aws_url, region_name="us-east-1")

    # When the launch templates are read
    templates = {t["LaunchTemplateName"]: t for t in ec2.describe_launch_templates()["LaunchTemplates"]}
    [copy] = [name for name in templates if held in name]
    base = copy.split(f"-{held}-v")[0]

    def data(name: str) -> dict[str, Any]:
        versions = ec2.describe_launch_template_versions(LaunchTemplateName=name, Versions=["$Latest"])
        return dict(versions["LaunchTemplateVersions"][0]["LaunchTemplateData"])

    # Then the copy keeps the stack's settings (its user data and metadata options) and targets the reservation
    made, stacks = data(copy), data(base)
    assert made["UserData"] == stacks["UserData"] and made["MetadataOptions"] == stacks["MetadataOptions"]
    assert made["CapacityReservationSpecification"]["CapacityReservationTarget"]["CapacityReservationId"] == held


def test_a_reservation_of_another_platform_or_tenancy_is_not_a_candidate_and_the_plan_says_why(
    cloud: RunningCloud,
) -> None:
    # Given open reservations with room: g4dn.xlarge for Windows, g4dn.2xlarge on dedicated hardware
    held = reservations(cloud)
    windows, dedicated = held["g4dn.xlarge"], held["g4dn.2xlarge"]
    assert (windows["InstancePlatform"], dedicated["Tenancy"]) == ("Windows", "dedicated")

    # When a job that fits both is planned
    plan = cloud.api.request("POST", "/plan", JOB | {"instance_types": ["g4dn.xlarge", "g4dn.2xlarge"]}).body

    # Then neither is a zero-price candidate, and the rejections say why
    assert [c for c in plan["candidates"] if c["reservation"]] == [], plan["candidates"]
    reasons = " | ".join(r["reason"] for r in plan["rejected"])
    assert f"{windows['CapacityReservationId']}: reserves Windows instances" in reasons
    assert f"{dedicated['CapacityReservationId']}: dedicated tenancy" in reasons


def test_the_sweep_reports_a_reservations_idle_hours_as_waste_billed_to_its_owner(cloud: RunningCloud) -> None:
    # Given the reservation of 2 g5.xlarge, mostly idle, and the Windows and dedicated ones, idle
    held = reservations(cloud)
    odcr = held["g5.xlarge"]

    # When two sweeps run (the second charges the idle hours since the first) and the costs are read
    for _ in range(2):
        assert cloud.cli("--json", "sweep").returncode == 0
    costs = json.loads(cloud.cli("--json", "costs").stdout)

    # Then the reservation's idle hours are waste, by reason and by reservation (the block idles too once a test has
    # let it begin: the reasons' total is every reservation's), billed to the account that owns it
    waste = costs["waste"]
    assert waste["by_reservation"][odcr["CapacityReservationId"]] > 0, waste
    assert waste["by_reason"]["reservation_idle"] == pytest.approx(sum(waste["by_reservation"].values())), waste
    assert waste["billed_to"][odcr["CapacityReservationId"]] == odcr["OwnerId"]
    # And the reservations GPU Pilot cannot launch into idle at their holders' expense, not as GPU Pilot's waste
    unusable = {held["g4dn.xlarge"]["CapacityReservationId"], held["g4dn.2xlarge"]["CapacityReservationId"]}
    assert unusable.isdisjoint(waste["by_reservation"]), waste


def test_a_job_too_long_for_a_capacity_block_is_not_placed_on_it(cloud: RunningCloud) -> None:
    # Given a two-hour Capacity Block (EC2 takes its instances back 30 minutes before its end)
    block = reservations(cloud)["g6e.xlarge"]["CapacityReservationId"]

    # When a job of 60 minutes asks for it
    answer = cloud.api.request("POST", "/jobs", JOB | {"reservation": block, "timeout_minutes": 60})

    # Then nothing starts, and the refusal says why
    assert answer.status == 400, answer.body
    [rejected] = answer.body["rejected"]
    assert rejected["instance_type"] == "g6e.xlarge"
    assert "timeout_minutes 60" in rejected["reason"] and block in rejected["reason"]


def test_a_job_whose_one_try_fits_a_capacity_block_but_whose_retries_do_not_is_not_placed_on_it(
    cloud: RunningCloud,
) -> None:
    # Given the two-hour Capacity Block, whose instances go within 90 minutes
    block = reservations(cloud)["g6e.xlarge"]["CapacityReservationId"]

    # When a job of 30 minutes asks for it (40 minutes with its instance's start; Batch may try it 3 times)
    answer = cloud.api.request("POST", "/jobs", JOB | {"reservation": block, "timeout_minutes": 30})

    # Then nothing starts, and the refusal counts Batch's tries
    assert answer.status == 400, answer.body
    [rejected] = answer.body["rejected"]
    assert rejected["field"] == "timeout_minutes"
    assert "each of the 3 tries Batch may make (120 min)" in rejected["reason"], rejected


def offering_id(cloud: RunningCloud, instance_type: str = "p5.48xlarge", count: int = 2, days: int = 3) -> str:
    listed = cloud.cli(
        "--json", "reservations", "--offerings", "--type", instance_type, "--count", str(count), "--days", str(days)
    )
    assert listed.returncode == 0, listed.stderr
    return str(json.loads(listed.stdout)["offerings"][0]["offering_id"])


def test_reservations_lists_what_the_account_holds_and_the_capacity_block_offerings(cloud: RunningCloud) -> None:
    # When the reservations and the offerings of 2 p5.48xlarge for 3 days are listed
    held = cloud.cli("reservations")
    listed = cloud.cli("--json", "reservations", "--offerings", "--type", "p5.48xlarge", "--count", "2", "--days", "3")

    # Then the account's two reservations are shown, and the offering with its start, end and upfront fee
    assert held.returncode == 0, held.stderr
    assert "g5.xlarge" in held.stdout and "g6e.xlarge" in held.stdout
    [offering] = json.loads(listed.stdout)["offerings"]
    assert (offering["instance_type"], offering["count"], offering["hours"]) == ("p5.48xlarge", 2, 72)
    assert offering["upfront_usd"] == 94000
    assert offering["starts_at"] < offering["ends_at"]


def test_a_purchase_is_refused_without_the_deployments_ceiling(cloud: RunningCloud) -> None:
    # Given a deployment without max_capacity_block_upfront_usd (the default), and a listed offering
    listed = offering_id(cloud)

    # When it is bought with --yes and a limit above its fee
    bought = cloud.cli("reserve", listed, "--yes", "--max-upfront-usd", "100000")

    # Then it is refused, naming the ceiling, and the account holds no new reservation
    assert bought.returncode == 2
    assert "max_capacity_block_upfront_usd" in bought.stderr
    assert "p5.48xlarge" not in reservations(cloud)


def test_a_purchase_is_refused_without_yes(cloud: RunningCloud) -> None:
    bought = cloud.cli("reserve", offering_id(cloud), "--max-upfront-usd", "100000")

    assert bought.returncode == 2
    assert "--yes" in bought.stderr and len(bought.stderr.strip().splitlines()) == 1
    assert "p5.48xlarge" not in reservations(cloud)


WEST = "us-west-2"
CEILING = 95000
PURCHASING_WORLD = {
    "jobs": {"runtime_seconds": 1},
    # A capacity region, with the home region's defaults (its zones left out)
    "regions": {WEST: {}},
    "capacity_block_offerings": [
        *WORLD["capacity_block_offerings"],
        # A block that begins today, 47 h 15 min long: EC2 offers it to a question of 2 days
        {"instance_type": "p4d.24xlarge", "count": 1, "hours": 47.25, "upfront_usd": 1500},
        # A block offered in the capacity region only
        {"instance_type": "p5.48xlarge", "count": 1, "hours": 24, "upfront_usd": 31000, "region": WEST},
        # A block dearer than the deployment's ceiling
        {"instance_type": "p4d.24xlarge", "count": 2, "hours": 24, "upfront_usd": CEILING + 1000},
    ],
}


@pytest.fixture(scope="module")
def purchasing_cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCloud]:
    """A local cloud of two regions, its stacks synthesized with a ceiling of $95,000 a block."""
    root = tmp_path_factory.mktemp("purchasing")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("GPUPILOT_CDK_CONTEXT", json.dumps({"max_capacity_block_upfront_usd": CEILING}))
        running = start_cloud(root, PURCHASING_WORLD)
    yield running
    stop_cloud(running)


def test_a_purchase_above_max_upfront_usd_is_refused_and_within_it_is_bought(purchasing_cloud: RunningCloud) -> None:
    # Given a deployment that allows purchases, and an offering of $94,000 listed
    listed = offering_id(purchasing_cloud)

    # When it is bought with a limit below its fee, then with one that covers it
    above = purchasing_cloud.cli("reserve", listed, "--yes", "--max-upfront-usd", "93999")
    within = purchasing_cloud.cli("--json", "reserve", listed, "--yes", "--max-upfront-usd", "94000")

    # Then the first is refused naming the limit, and the second buys the block the account then holds
    assert above.returncode == 2 and "max_upfront_usd" in above.stderr
    assert within.returncode == 0, within.stderr
    bought = json.loads(within.stdout)
    assert (bought["capacity_block"], bought["upfront_usd"]) == (True, 94000)
    assert reservations(purchasing_cloud)["p5.48xlarge"]["CapacityReservationId"] == bought["reservation_id"]


def test_a_purchase_above_the_deployment_s_ceiling_is_refused_whatever_the_caller_allows(
    purchasing_cloud: RunningCloud,
) -> None:
    # Given a block dearer than the deployment's ceiling, listed
    shown = purchasing_cloud.api.request(
        "GET", "/reservations/offerings", query={"instance_type": "p4d.24xlarge", "count": 2, "days": 1}
    ).body
    [offering] = shown["offerings"]

    # When it is bought with a limit that covers its fee
    bought = purchasing_cloud.cli("reserve", offering["offering_id"], "--yes", "--max-upfront-usd", "1000000")

    # Then it is refused naming the ceiling, and nothing is bought
    assert bought.returncode == 2 and "max_capacity_block_upfront_usd" in bought.stderr, bought.stderr
    assert (reservations(purchasing_cloud).get("p4d.24xlarge") or {}).get("TotalInstanceCount") != 2


def test_an_offering_shorter_than_the_whole_days_asked_is_bought_for_those_days(purchasing_cloud: RunningCloud) -> None:
    # Given an offering of 47 h 15 min, listed for 2 days (EC2 takes durations in whole days), its length said
    shown = purchasing_cloud.api.request(
        "GET", "/reservations/offerings", query={"instance_type": "p4d.24xlarge", "count": 1, "days": 2}
    ).body
    [offering] = shown["offerings"]
    assert (offering["hours"], offering["days"]) == (47.25, 2), offering
    listed = offering["offering_id"]

    # When it is bought
    bought = purchasing_cloud.cli("--json", "reserve", listed, "--yes", "--max-upfront-usd", "1500")

    # Then EC2 was asked again for the 2 days it was listed for, and it was bought
    assert bought.returncode == 0, bought.stderr
    assert (
        reservations(purchasing_cloud)["p4d.24xlarge"]["CapacityReservationId"]
        == json.loads(bought.stdout)["reservation_id"]
    )


def test_capacity_blocks_are_listed_and_bought_in_a_capacity_region(purchasing_cloud: RunningCloud) -> None:
    # Given a Capacity Block of one p5.48xlarge offered in us-west-2 only
    listed = purchasing_cloud.cli(
        "--json", "reservations", "--offerings", "--type", "p5.48xlarge", "--count", "1", "--days", "1"
    )
    [offering] = json.loads(listed.stdout)["offerings"]
    assert (offering["region"], offering["zone"]) == (WEST, f"{WEST}a"), offering

    # When it is bought
    bought = purchasing_cloud.cli("--json", "reserve", offering["offering_id"], "--yes", "--max-upfront-usd", "31000")

    # Then it was bought in us-west-2, where EC2 holds it, and it is listed with its region
    assert bought.returncode == 0, bought.stderr
    reservation = json.loads(bought.stdout)
    assert reservation["region"] == WEST
    west = boto3.client("ec2", endpoint_url=purchasing_cloud.aws_url, region_name=WEST)
    held = [r["CapacityReservationId"] for r in west.describe_capacity_reservations()["CapacityReservations"]]
    assert held == [reservation["reservation_id"]]
    regions = {r["reservation_id"]: r["region"] for r in purchasing_cloud.api.request("GET", "/reservations").body[
        "reservations"]}  # fmt: skip
    assert regions[reservation["reservation_id"]] == WEST
