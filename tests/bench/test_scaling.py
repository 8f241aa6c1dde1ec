"""docs/scaling.md is rendered from bench/results/scaling.json; its jobs per minute follow from the counts; and a plain
job's AWS calls by API, counted through the local cloud, stay within the figures committed there (a sweep's are held
to theirs by tests/bench/test_sweep.py, which counts one at the sweep bench's scale)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from bench import RESULTS_DIR, scaling, scaling_page

pytestmark = pytest.mark.bench
COMMITTED: dict[str, Any] = json.loads((RESULTS_DIR / "scaling.json").read_text())


def test_docs_scaling_is_what_the_result_file_renders() -> None:
    # Given the committed result / Then the committed page is exactly its rendering
    assert scaling_page.DOCUMENT.read_text() == scaling_page.render(), (
        "docs/scaling.md is stale: run python -m bench.scaling_page"
    )


def test_a_changed_count_changes_the_page() -> None:
    # Given the committed result with a job making one more SubmitJob
    changed = copy.deepcopy(COMMITTED)
    job = changed["details"]["job"]
    job["calls"]["batch:SubmitJob"] += 1
    changed["details"]["quotas"] = scaling.sustained(job, changed["details"]["sweep"])
    # Then the page rendered from it shows the count and the rate it leaves, so the committed page no longer matches
    page = scaling_page.render(changed)
    assert f"| batch | SubmitJob | {job['calls']['batch:SubmitJob']} |" in page
    assert page != scaling_page.DOCUMENT.read_text()


def test_each_quota_s_jobs_per_minute_follow_from_a_job_s_and_the_sweeps_counts() -> None:
    job, sweep = COMMITTED["details"]["job"], COMMITTED["details"]["sweep"]
    # Given the committed counts / Then the committed rows are what they compute, the first quota the fewest
    rows = scaling.sustained(job, sweep)
    assert rows == COMMITTED["details"]["quotas"]
    assert COMMITTED["details"]["first_quota"] == rows[0]["quota"]
    assert COMMITTED["metrics"]["sustained_jobs_per_minute"]["value"] == rows[0]["jobs_per_minute"]
    # When a job makes twice its SubmitJob calls, SubmitJob's quota holds half the jobs
    doubled = job | {"calls": job["calls"] | {"batch:SubmitJob": 2 * job["calls"]["batch:SubmitJob"]}}
    before = {row["quota"]: row["jobs_per_minute"] for row in rows}
    after = {row["quota"]: row["jobs_per_minute"] for row in scaling.sustained(doubled, sweep)}
    assert after["batch:SubmitJob"] == pytest.approx(before["batch:SubmitJob"] / 2, rel=1e-3)


@pytest.fixture(scope="module")
def measured() -> dict[str, Any]:
    """A first job (it makes its pool), then plain jobs in that pool, through a fresh local cloud."""
    return scaling.run_job_session_process(scaling.PLAIN_JOBS)


def test_a_plain_job_makes_no_more_calls_of_any_api_than_the_committed_figures(measured: dict[str, Any]) -> None:
    # Given plain jobs through the local cloud, from POST /jobs to the end of their workflows
    job = scaling.fewest(measured["plain_jobs"])
    committed = COMMITTED["details"]["job"]["calls"]
    # Then no API is called more often than the committed figures say (a new API counts as grown from 0)
    grown = {
        api: (count, committed.get(api, 0)) for api, count in job["calls"].items() if count > committed.get(api, 0)
    }
    assert not grown, f"(measured, committed) by API: {grown}"


def test_a_plain_job_invokes_no_function_and_enters_no_state_more_than_the_committed_figures(
    measured: dict[str, Any],
) -> None:
    # Given the same plain jobs
    plain = measured["plain_jobs"]
    committed = COMMITTED["details"]["job"]
    # Then each function is invoked, and the workflow transitions, at most as often as committed
    functions = {key for job in plain for key in job["lambda_invocations_by_function"]}
    invoked = {key: min(job["lambda_invocations_by_function"].get(key, 0) for job in plain) for key in functions}
    grown = {key: n for key, n in invoked.items() if n > committed["lambda_invocations_by_function"].get(key, 0)}
    assert not grown, (invoked, committed["lambda_invocations_by_function"])
    assert min(job["state_transitions"] for job in plain) <= committed["state_transitions"]
    assert min(job["eventbridge_invocations"] for job in plain) <= committed["eventbridge_invocations"]
