"""A plan's AWS calls, counted on the product: a warm plan makes at most 3 (the goal), a cold one at most what a new
container reads once (bench/plan.py's COLD_READS, docs/how-it-works.md); and a plan that keeps nothing between
calls shows in the bench."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import REPO_ROOT, plan

pytestmark = pytest.mark.bench


def plan_result(tmp_path: Path, *variant: str) -> dict[str, Any]:
    """The bench at a small size (3 timed plans), in its own interpreter: its result."""
    output = tmp_path / "plan.json"
    command = [sys.executable, "-m", "bench.plan", "--runs", "3", "--output", str(output), *variant]
    subprocess.run(command, cwd=REPO_ROOT, check=True, timeout=240, capture_output=True)
    return dict(json.loads(output.read_text()))


@pytest.fixture(scope="module")
def product(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The plans of the product as it is: a cold one in a new process, then warm ones."""
    return plan_result(tmp_path_factory.mktemp("plan"))


def test_a_warm_plan_makes_at_most_three_aws_calls(product: dict[str, Any]) -> None:
    # Given a process that planned once already
    # Then its next plan makes at most the goal's 3 calls
    assert plan.WARM_GOAL == 3
    assert product["metrics"]["aws_calls_warm"]["value"] <= plan.WARM_GOAL, product["details"]["warm_calls"]


def test_a_cold_plan_makes_at_most_the_calls_its_documentation_lists(product: dict[str, Any]) -> None:
    # Given a new process's first plan
    cold = product["details"]["cold_calls"]
    # Then it makes at most the documented 10 calls, none of an API the documentation does not list
    assert plan.COLD_BUDGET == 10
    assert product["metrics"]["aws_calls_cold"]["value"] <= plan.COLD_BUDGET, cold
    assert all(count <= plan.COLD_READS.get(api, 0) for api, count in cold.items()), cold


def test_a_plan_without_its_caches_makes_more_aws_calls_when_warm(tmp_path: Path, product: dict[str, Any]) -> None:
    # Given the bench with new adapters for every plan (nothing kept in the process)
    uncached = plan_result(tmp_path, "--no-cache")["metrics"]["aws_calls_warm"]["value"]
    # Then a warm plan makes the catalog's, the offerings' and the quotas' calls again, past the goal of 3
    assert uncached >= product["metrics"]["aws_calls_warm"]["value"] + 3, uncached
    assert uncached > plan.WARM_GOAL
