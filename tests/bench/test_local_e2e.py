"""The local_e2e bench can fail: it counts what a polling client waits for, up to the job's last event."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench import REPO_ROOT

pytestmark = pytest.mark.bench
HOLD_SECONDS = 3.0


def one_at_a_time_overhead(tmp_path: Path, *variant: str) -> dict[str, Any]:
    """The bench at a small size (one job sent alone, on one GPU type), in its own interpreter."""
    output = tmp_path / "local_e2e.json"
    command = [sys.executable, "-m", "bench.local_e2e", "--jobs", "0", "--alone", "1", "--types", "g5.xlarge",
               "--output", str(output), *variant]  # fmt: skip
    subprocess.run(command, cwd=REPO_ROOT, check=True, timeout=240, capture_output=True)
    return dict(json.loads(output.read_text())["metrics"]["overhead_seconds_median_one_at_a_time"])


def test_a_late_terminal_event_shows_in_the_overhead_a_client_sees(tmp_path: Path) -> None:
    # Given the bench on the local cloud as it is, and on one that delivers each job's last Batch event 3 s late
    # (Batch's stoppedAt, which the old figure stopped at, does not move)
    prompt = one_at_a_time_overhead(tmp_path)
    late = one_at_a_time_overhead(tmp_path, "--hold-terminal-events", str(HOLD_SECONDS))
    # Then the overhead a polling client sees grows by at least the delay
    assert late["value"] >= HOLD_SECONDS, late
    assert late["value"] > prompt["value"], (prompt, late)
