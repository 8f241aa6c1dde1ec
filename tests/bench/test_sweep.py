"""The sweep's AWS calls, counted on the product itself at the sweep bench's scale (10,000 RUNNABLE jobs in 20 queues,
200 instances, GPU Pilot's records behind 80% of the jobs), held to the fleet issue's budget; and the bench's own
worse variant, which shows that the bench can count a call per job."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import REPO_ROOT, RESULTS_DIR, sweep

SMALL_JOBS = 300
# Seeding 10,000 jobs and sweeping them twice takes about a minute of one core; a loaded machine, several.
AT_SCALE_TIMEOUT_SECONDS = 900
# The first test to ask for the counts at scale waits for them: the suite's 300 s per test is too short for that.
pytestmark = [pytest.mark.bench, pytest.mark.timeout(AT_SCALE_TIMEOUT_SECONDS + 60)]


def bench_output(tmp_path: Path, *arguments: str, timeout: float = 240) -> dict[str, Any]:
    """`python -m bench.sweep` with `arguments`, in its own interpreter (moto's state is global to one): its JSON."""
    output = tmp_path / "sweep.json"
    command = [sys.executable, "-m", "bench.sweep", *arguments, "--output", str(output)]
    subprocess.run(command, cwd=REPO_ROOT, check=True, timeout=timeout, capture_output=True)
    return dict(json.loads(output.read_text()))


@pytest.fixture(scope="module")
def at_scale(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The bench's world at its own scale: a cold sweep (a new container's clients and caches), then a warm one."""
    return bench_output(tmp_path_factory.mktemp("sweep"), "--counts", "--rounds", "2", timeout=AT_SCALE_TIMEOUT_SECONDS)


def test_a_warm_sweep_of_ten_thousand_jobs_makes_at_most_its_budget_of_calls(at_scale: dict[str, Any]) -> None:
    # Given the sweep bench's world, swept once already (its clients made, its caches filled)
    _, warm = at_scale["totals"]
    # Then the warm sweep makes at most ceil(jobs/100) + 5 x queues + 10 calls
    assert at_scale["budget"] == sweep.budget(sweep.JOBS, sweep.QUEUES) == 210
    assert warm <= at_scale["budget"], at_scale["calls_by_api_per_round"][1]


def test_a_cold_sweep_of_ten_thousand_jobs_adds_only_what_a_new_container_reads_once(at_scale: dict[str, Any]) -> None:
    # Given the same world's first sweep, in a new container
    cold, _ = at_scale["totals"]
    first, second = at_scale["calls_by_api_per_round"]
    # Then it makes at most the warm budget and the documented cold reads, each of them once
    assert at_scale["cold_budget"] == sweep.budget(sweep.JOBS, sweep.QUEUES) + len(sweep.COLD_READS) == 216
    assert cold <= at_scale["cold_budget"], first
    added = {api: count - second.get(api, 0) for api, count in first.items() if count > second.get(api, 0)}
    assert set(added) <= set(sweep.COLD_READS) and set(added.values()) <= {1}, added


def test_no_api_of_a_warm_sweep_is_called_more_than_the_committed_scaling_figures(at_scale: dict[str, Any]) -> None:
    # Given the warm sweep, and the figures docs/scaling.md weighs against AWS's quotas (bench/results/scaling.json)
    _, warm = at_scale["calls_by_api_per_round"]
    committed = json.loads((RESULTS_DIR / "scaling.json").read_text())["details"]["sweep"]
    assert (committed["jobs"], committed["queues"]) == (at_scale["jobs"], at_scale["queues"])
    # Then no API is called more often than committed (a new API counts as grown from 0)
    grown = {api: (n, committed["calls"].get(api, 0)) for api, n in warm.items() if n > committed["calls"].get(api, 0)}
    assert not grown, f"(measured, committed) by API: {grown}"


def test_a_call_per_listed_job_shows_in_the_bench_s_call_count(tmp_path: Path) -> None:
    # Given the bench at a small size (300 jobs in 3 queues, 2 rounds) with the Batch adapter as it is, and with one
    # that describes each job it lists
    small = ("--counts", "--jobs", str(SMALL_JOBS), "--queues", "3", "--instances", "6", "--rounds", "2")
    plain = bench_output(tmp_path, *small)
    worse = bench_output(tmp_path, *small, "--describe-each-listed-job")
    # Then the worse sweep's calls grow by a call per job, cold and warm, far past the budget
    for plain_calls, worse_calls in zip(plain["totals"], worse["totals"], strict=True):
        assert worse_calls >= plain_calls + SMALL_JOBS, (plain["totals"], worse["totals"])
        assert worse_calls > worse["budget"], worse["totals"]
