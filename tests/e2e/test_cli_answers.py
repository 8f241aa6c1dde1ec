"""The CLI says what happened, through the local cloud: a refusal names the flag that caused it, `plan` refuses what
`submit` refuses, and the next step, the offerings, a finished attempt's logs and a second cancel each say what is
so."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from tests.e2e.conftest import RunningCloud

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
    assert "instance type" in planned.stdout and cloud.api.request("GET", "/jobs").body["jobs"] == []
    # And the API's plan carries that refusal, as the submit's 400 says it
    plan = cloud.api.request("POST", "/plan", JOB).body
    refused = cloud.api.request("POST", "/jobs", JOB).body
    assert plan["refusal"] == {"error": "NoCandidate", "field": "price_band", "message": refused["message"]}
