"""Faults on the local cloud (the world's `faults`): throttled AWS calls, Batch events dropped, duplicated and
reordered, Lambda invocations failing. Every job still ends, with a record Batch agrees with, none lost and
none duplicated. (`make bench` runs them all at once on more jobs: bench/results/faults.json.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.conftest import PATIENCE_SECONDS, RunningCloud
from tests.e2e.faults.drive import RESUMED, STUCK_AFTER_MINUTES, list_all, metric_sum, run_jobs

pytestmark = pytest.mark.e2e
JOBS = 3
# A start wait this long outlasts the test many times over: a job it holds is moved on by the sweep or not at all.
NEVER_DIAGNOSED_MINUTES = 30.0


def accounted(
    cloud: RunningCloud, prefix: str, jobs: int = JOBS, stuck_after_minutes: float = STUCK_AFTER_MINUTES
) -> dict[str, Any]:
    accounting = run_jobs(cloud.api_url, cloud.aws_url, jobs, prefix, PATIENCE_SECONDS, stuck_after_minutes)
    summary = accounting.summary() | {"finished_by_job": accounting.finished_by}
    assert summary["accepted"] == jobs, summary
    assert not summary["not_terminal"] and not summary["lost"] and not summary["duplicated"], summary
    return summary


def test_throttled_aws_calls_slow_jobs_down_but_every_job_succeeds(cloud_factory: Callable[..., RunningCloud]) -> None:
    throttle = {"batch": 0.3, "ec2": 0.3, "dynamodb": 0.3, "stepfunctions": 0.3}
    cloud = cloud_factory({"jobs": {"runtime_seconds": 1}, "faults": {"throttle": throttle, "seed": 7}})
    assert accounted(cloud, "throttled", jobs=1)["statuses"] == {"SUCCEEDED": 1}


def test_dropped_duplicated_and_reordered_events_change_no_outcome(cloud_factory: Callable[..., RunningCloud]) -> None:
    # Half the events dropped (the sweep reconciles them), others delivered twice or after the next one
    events = {"drop": 0.5, "duplicate": 0.5, "reorder": True}
    cloud = cloud_factory({"jobs": {"runtime_seconds": 1}, "faults": {"events": events, "seed": 7}}, sweep_seconds=2)
    assert accounted(cloud, "events")["statuses"] == {"SUCCEEDED": JOBS}


def test_with_every_batch_event_dropped_the_sweeps_replay_finishes_every_job_before_any_diagnosis_could(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given every Batch event dropped, a sweep every 2 s, and jobs whose start wait is diagnosed only after 30
    # minutes: nothing but the sweep's replay of their missed events can move them on within this test
    cloud = cloud_factory({"jobs": {"runtime_seconds": 1}, "faults": {"events": {"drop": 1.0}}}, sweep_seconds=2)
    # When two jobs run
    summary = accounted(cloud, "dropped", jobs=2, stuck_after_minutes=NEVER_DIAGNOSED_MINUTES)
    # Then both succeed, each workflow resumed from its waits (none timed out, no diagnosis ran)
    assert summary["statuses"] == {"SUCCEEDED": 2}, summary
    assert set(summary["finished_by_job"].values()) == {RESUMED}, summary
    # And with no event delivered, what resumed them is the sweeps' replays: they count one event at least per job
    replayed = cloud.until(
        "the sweeps' replays to count two events",
        lambda: (found := metric_sum(cloud.aws_url, "ReconciledEvents")) >= 2 and found,
    )
    assert replayed >= 2, replayed


def test_lambda_service_errors_are_retried_and_every_job_ends_with_its_record(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # 15% of invocations fail before the function runs, and each task retries them 3 times: a job fails only when
    # one of its tasks draws 4 faults in a row. Seed 7's stream has such a run early on (4 of draws 8 to 14), and
    # which job, if any, draws it depends on thread timing: that job ends FAILED with the Lambda error recorded,
    # as a deployed job would.
    cloud = cloud_factory(
        {"jobs": {"runtime_seconds": 1}, "faults": {"lambda_errors": 0.15, "seed": 7}}, sweep_seconds=3
    )
    statuses = accounted(cloud, "lambda")["statuses"]
    # Without the retries, a job would succeed only if its ~7 invocations all did (0.85^7: 1 job in 3)
    assert statuses.get("SUCCEEDED", 0) >= JOBS - 1, statuses
    failed = [j for j in list_all(cloud.api_url) if j["name"].startswith("lambda-") and j["status"] != "SUCCEEDED"]
    said = [{key: j.get(key) for key in ("job_id", "status", "error", "timeline")} for j in failed]
    assert all(j["error"].startswith("Lambda.ServiceException") for j in failed), said


# The market signals selection reads, each refused as AWS can refuse it (an organisation's policy).
REFUSED = {
    "GetSpotPlacementScores": "UnauthorizedOperation",
    "DescribeSpotPriceHistory": "UnauthorizedOperation",
    "GetServiceQuota": "AccessDeniedException",
    "GetProducts": "AccessDeniedException",
}


def test_market_signals_aws_refuses_are_warnings_and_the_job_still_runs(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a world where AWS refuses every market signal GPU Pilot ranks offerings by
    cloud = cloud_factory({"jobs": {"runtime_seconds": 1}, "faults": {"refuse": REFUSED}})
    body = {"name": "refused", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"],
            "capacity": "spot-first"}  # fmt: skip

    # When the job is planned, then submitted
    plan = cloud.api.request("POST", "/plan", body)
    submitted = cloud.api.request("POST", "/jobs", body)

    # Then both answer with a plan, each refused call and its error named once in the warnings
    assert (plan.status, submitted.status) == (200, 202), (plan.body, submitted.body)
    for warnings in (plan.body["warnings"], submitted.body["warnings"]):
        for operation, code in REFUSED.items():
            assert sum(f"({operation}: {code})" in w for w in warnings) == 1, (operation, warnings)
    first, second = plan.body["candidates"][:2]
    assert (first["capacity"], first["hourly_usd"], first["placement_score"]) == ("spot", None, None)
    assert second["capacity"] == "on-demand" and "price snapshot" in second["pricing"]
    # And the job runs to its end
    job = cloud.wait_for(submitted.body["job_id"], {"SUCCEEDED", "FAILED"})
    assert job["status"] == "SUCCEEDED", job
