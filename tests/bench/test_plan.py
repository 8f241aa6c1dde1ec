"""The plan bench can fail: a plan that keeps nothing between calls shows in its calls and its latency."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import REPO_ROOT

pytestmark = pytest.mark.bench


def plan_metrics(tmp_path: Path, *variant: str) -> dict[str, Any]:
    """The bench at a small size (3 timed plans), in its own interpreter: its metrics."""
    output = tmp_path / "plan.json"
    command = [sys.executable, "-m", "bench.plan", "--runs", "3", "--output", str(output), *variant]
    subprocess.run(command, cwd=REPO_ROOT, check=True, timeout=240, capture_output=True)
    return dict(json.loads(output.read_text())["metrics"])


def test_a_plan_without_its_caches_makes_more_aws_calls_when_warm(tmp_path: Path) -> None:
    # Given the bench as it is, and with new adapters for every plan (nothing kept in the process)
    cached = plan_metrics(tmp_path)
    uncached = plan_metrics(tmp_path, "--no-cache")
    # Then a warm plan makes the catalog's, the offerings' and the quotas' calls again, past the goal of 3
    assert uncached["aws_calls_warm"]["value"] >= cached["aws_calls_warm"]["value"] + 3, (cached, uncached)
    assert uncached["aws_calls_warm"]["value"] > uncached["aws_calls_warm"]["baseline"]
