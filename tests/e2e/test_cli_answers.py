"""The CLI says what happened, through the local cloud: a refusal names the flag that caused it, `plan` refuses what
`submit` refuses, and the next step, the offerings, a finished attempt's logs and a second cancel each say what is
so."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import boto3
import pytest

from tests.e2e.conftest import PATIENCE_SECONDS, RunningCloud

pytestmark = pytest.mark.e2e
IMAGE = "nvidia/cuda:12.4.1-base-ubuntu22.04"
JOB = {"name": "answers", "image": IMAGE, "command": ["nvidia-smi", "-L"]}
REQUEST = ("--name", "answers", "--image", IMAGE)


def test_a_refusal_for_a_budget_names_the_budget_flag_not_a_type_remembered_short_of_capacity(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given the cheapest type has no capacity, and a job that fell back from it (so it is remembered unavailable,
    # the first of the reasons the plan lists)
    cloud = cloud_factory({"instance_types": {"g4dn.xlarge": {"capacity": "none"}}, "jobs": {"runtime_seconds": 1}})
    fell_back = cloud.api.request("POST", "/jobs", JOB).body["job_id"]
    assert len(cloud.wait_for(fell_back, {"SUCCEEDED"}, 90)["attempts"]) == 2

    # When a job is submitted, and planned, with a budget no type meets
    budget = (*REQUEST, "--max-hourly-usd", "0.01", "--", "true")
    submitted = cloud.cli("submit", "--yes", *budget)
    planned = cloud.cli("--json", "plan", *budget)

    # Then the refusal names the budget's flag (its field with --json), not the capacity of the remembered type
    assert submitted.returncode == 2, submitted.stderr
    assert submitted.stderr.startswith("gpupilot: NoCandidate [--max-hourly-usd]: "), submitted.stderr
    assert "g4dn.xlarge" in submitted.stderr
    assert planned.returncode == 2, planned.stderr
    assert json.loads(planned.stderr)["field"] == "max_hourly_usd"


def test_plan_refuses_what_submit_refuses_in_the_same_words_and_exit_code(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given no G type may start (their vCPU quota is 0), so the first choice costs far more than the cheapest type
    cloud = cloud_factory({"quotas": {"L-DB2E81BA": 0}})
    request = (*REQUEST, "--", "true")

    # When the request is planned, then submitted
    planned = cloud.cli("plan", *request)
    submitted = cloud.cli("submit", "--yes", *request)

    # Then both refuse it, exit 2, with one and the same line naming the price band (the plan is shown first)
    assert (planned.returncode, submitted.returncode) == (2, 2), (planned.stderr, submitted.stderr)
    assert planned.stderr == submitted.stderr, (planned.stderr, submitted.stderr)
    assert planned.stderr.startswith("gpupilot: NoCandidate [--price-band]: no GPU offering within price_band 3")
    assert "GPU type" in planned.stdout and cloud.api.request("GET", "/jobs").body["jobs"] == []
    # And the API's plan carries that refusal, as the submit's 400 says it
    plan = cloud.api.request("POST", "/plan", JOB).body
    refused = cloud.api.request("POST", "/jobs", JOB).body
    assert plan["refusal"] == {"error": "NoCandidate", "field": "price_band", "message": refused["message"]}


TWO_REGIONS = {"regions": {"us-west-2": {"zones": ["us-west-2a", "us-west-2b"]}}, "jobs": {"runtime_seconds": 1}}


def test_a_job_allowed_only_home_is_told_which_capacity_region_could_serve_it_and_how_to_allow_it(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given home has no g5.xlarge capacity (Batch says so once a job waits) and us-west-2 has, and a job that may
    # run only at home, the default, with no other candidate
    cloud = cloud_factory(TWO_REGIONS | {"instance_types": {"g5.xlarge": {"capacity": "none"}}})
    request = (*REQUEST, "--instance-type", "g5.xlarge", "--stuck-after-minutes", "0.1", "--", "true")

    # When it is planned, then submitted and followed to its end
    planned = cloud.cli("plan", *request)
    submitted = cloud.cli("--json", "submit", "--yes", *request)
    job = cloud.wait_for(json.loads(submitted.stdout)["job_id"], {"FAILED", "SUCCEEDED"}, 120)
    shown = cloud.cli("--wide", "status", job["job_id"])

    # Then the plan says us-west-2 could serve it, and how to allow it
    allow = "--region us-east-1 --region us-west-2"
    assert planned.returncode == 0, planned.stderr
    assert "us-west-2, a capacity region of this deployment the job may not use, could serve it" in planned.stdout
    assert allow in planned.stdout
    # And the job failed at home, its error saying the same, as status shows it
    assert (job["status"], [a["region"] for a in job["attempts"]]) == ("FAILED", ["us-east-1"]), job
    assert (
        "us-west-2, a capacity region of this deployment the job may not use" in job["error"] and allow in job["error"]
    )
    error_row = next(line for line in shown.stdout.splitlines() if line.startswith("error"))
    assert allow in error_row


def test_the_next_step_names_its_region_when_it_leaves_the_region_the_job_waits_in(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given home's g4dn.xlarge instances never join their cluster (Batch gives no reason: the job waits out its
    # stuck_after_minutes), and a job allowed home then us-west-2
    cloud = cloud_factory(TWO_REGIONS | {"instance_types": {"g4dn.xlarge": {"ecs_agent": "never_registers"}}})
    submitted = cloud.api.request(
        "POST", "/jobs", JOB | {"instance_types": ["g4dn.xlarge"], "regions": ["us-east-1", "us-west-2"]}
    ).body
    cloud.wait_for(submitted["job_id"], {"RUNNABLE"})

    # When its status is shown while it waits at home
    shown = cloud.cli("--wide", "status", submitted["job_id"])

    # Then its next step, a fallback or a diagnosis that may lead to one, says where it would go
    assert shown.returncode == 0, shown.stderr
    next_row = next(line for line in shown.stdout.splitlines() if line.startswith("next "))
    assert re.search(r"falls? back to g4dn\.xlarge \(on-demand\) in us-west-2", next_row), shown.stdout
    assert cloud.cli("cancel", submitted["job_id"]).returncode == 0


def test_offerings_suggest_reserve_only_where_the_deployment_buys_them_and_else_how_to_let_it(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a Capacity Block on offer, and a deployment that does not buy them (the default)
    offer = {"instance_type": "p5.48xlarge", "count": 1, "hours": 24, "starts_in_seconds": 3600, "upfront_usd": 900}
    cloud = cloud_factory({"capacity_block_offerings": [offer]})
    listing = ("reservations", "--offerings", "--type", "p5.48xlarge", "--count", "1", "--days", "1")

    # When the offerings are listed / Then reserve is not suggested, and how to let the deployment buy is said
    refused = cloud.cli("--wide", *listing)
    assert refused.returncode == 0 and "p5.48xlarge" in refused.stdout, refused.stderr
    assert "gpupilot reserve OFFERING" not in refused.stdout
    assert "max_capacity_block_upfront_usd" in refused.stdout

    # And once the deployment allows purchases, the listing says how to buy one
    api = boto3.client("lambda", endpoint_url=cloud.aws_url, region_name="us-east-1")
    [function] = [f for f in api.list_functions()["Functions"] if f["Handler"] == "functions.api.handler.handler"]
    variables = function["Environment"]["Variables"] | {"GPUPILOT_MAX_CAPACITY_BLOCK_UPFRONT_USD": "5000"}
    api.update_function_configuration(FunctionName=function["FunctionName"], Environment={"Variables": variables})
    allowed = cloud.cli("--wide", *listing)
    assert "buy one with: gpupilot reserve OFFERING --yes --max-upfront-usd USD" in allowed.stdout, allowed.stdout


def test_following_the_logs_of_an_attempt_that_ended_says_so_and_a_second_cancel_exits_0(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a job whose first type had no capacity (its attempt ended without running) and whose second runs long
    cloud = cloud_factory({"instance_types": {"g4dn.xlarge": {"capacity": "none"}}, "jobs": {"runtime_seconds": 600}})
    job_id = cloud.api.request("POST", "/jobs", JOB).body["job_id"]
    cloud.wait_for(job_id, {"RUNNING"}, 90)

    # When the first attempt's logs are followed
    followed = cloud.cli("logs", job_id, "--attempt", "1", "--follow", timeout=PATIENCE_SECONDS)

    # Then the command ends at once, saying the attempt has ended, not that it waits
    assert followed.returncode == 0, followed.stderr
    assert "attempt 1 of job" in followed.stderr and "ended (FAILED) without running" in followed.stderr
    assert "waits" not in followed.stderr

    # And cancelling the job twice: the second says it was cancelled already, and exits 0
    first, second = cloud.cli("cancel", job_id), cloud.cli("cancel", job_id)
    assert (first.returncode, second.returncode) == (0, 0), second.stderr
    assert second.stdout.strip() == f"{job_id} was already cancelled"
