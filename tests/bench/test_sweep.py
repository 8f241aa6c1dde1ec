"""The sweep bench can fail: an adapter that makes a call per job shows in the sweep's call count."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import REPO_ROOT

pytestmark = pytest.mark.bench
JOBS = 300


def sweep_calls(tmp_path: Path, *variant: str) -> dict[str, Any]:
    """The bench at a small size (300 jobs in 3 queues, 2 rounds), in its own interpreter: its metrics."""
    output = tmp_path / "sweep.json"
    command = [sys.executable, "-m", "bench.sweep", "--jobs", str(JOBS), "--queues", "3", "--instances", "6",
               "--rounds", "2", "--output", str(output), *variant]  # fmt: skip
    subprocess.run(command, cwd=REPO_ROOT, check=True, timeout=240, capture_output=True)
    return dict(json.loads(output.read_text())["metrics"])


def test_a_call_per_listed_job_shows_in_the_sweep_s_call_count(tmp_path: Path) -> None:
    # Given the bench with the Batch adapter as it is, and with one that describes each job it lists
    plain = sweep_calls(tmp_path)
    worse = sweep_calls(tmp_path, "--describe-each-listed-job")
    # Then the worse sweep's calls grow by a call per job, cold and warm, far past the goal's budget
    for sweep in ("cold", "warm"):
        name = f"api_calls_{sweep}_sweep_{JOBS}_jobs_3_queues"
        assert worse[name]["value"] >= plain[name]["value"] + JOBS, (plain[name], worse[name])
        assert worse[name]["value"] > worse[name]["baseline"], worse[name]
