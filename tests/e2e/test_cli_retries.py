"""`gpupilot submit --wait` rides out the API's transient 500s (the world's `lambda_errors`): the submit is retried
with its Idempotency-Key (its own when none is given) and every poll is retried, so each job is made once and
followed to its end."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

import pytest

from tests.e2e.conftest import RunningCloud

pytestmark = pytest.mark.e2e
RUNS = 3


def _outcome(printed: str) -> object:
    try:
        job = json.loads(printed)
    except ValueError:
        return printed[-300:]
    return job.get("status"), job.get("error"), [(a.get("status"), a.get("status_reason")) for a in job["attempts"]]


def test_submit_wait_rides_out_lambda_errors_and_makes_each_job_once(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a local cloud where a fifth of the Lambda invocations (the API's included) fail before they run: each
    # run makes a dozen API calls, so without retries nearly every run would end on a 500 (exit 4)
    world = {"jobs": {"runtime_seconds": 1}, "faults": {"lambda_errors": 0.2, "seed": 11}}
    cloud = cloud_factory(world, sweep_seconds=3)
    names = [f"retry-{uuid.uuid4().hex[:8]}" for _ in range(RUNS)]

    # When jobs are submitted and waited for, with a key and without
    results = []
    for index, name in enumerate(names):
        key = ["--idempotency-key", f"key-{name}"] if index % 2 == 0 else []
        results.append(cloud.cli("--json", "submit", "--name", name, "--image", "i", *key, "--wait", "--", "a"))

    # Then no run ends on a transient failure (exit 4): each follows its job to its end and reports it as JSON.
    # (With a fifth of every invocation failing, the workflow itself may, rarely, spend a step's four tries and
    # fail the job: that is exit 1 with the job FAILED, the workflow's outcome, not the CLI giving up.)
    assert all(r.returncode in (0, 1) for r in results), [(r.returncode, _outcome(r.stdout), r.stderr) for r in results]
    ended = {0: "SUCCEEDED", 1: "FAILED"}
    assert [json.loads(r.stdout)["status"] for r in results] == [ended[r.returncode] for r in results]
    # And each job exists once
    listed = cloud.api.request("GET", "/jobs", query={"limit": 100}).body["jobs"]
    assert sorted(job["name"] for job in listed if job["name"] in names) == sorted(names)
