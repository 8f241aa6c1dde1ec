"""The local_e2e bench can fail: it counts what a polling client waits for, up to the job's last event; and no
handler on a job's path waits in time.sleep."""

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


def one_at_a_time(directory: Path, *variant: str) -> dict[str, Any]:
    """The bench at a small size (one job sent alone, on one GPU type), in its own interpreter: its result."""
    output = directory / "local_e2e.json"
    command = [sys.executable, "-m", "bench.local_e2e", "--jobs", "0", "--alone", "1", "--types", "g5.xlarge",
               "--output", str(output), *variant]  # fmt: skip
    subprocess.run(command, cwd=REPO_ROOT, check=True, timeout=240, capture_output=True)
    return dict(json.loads(output.read_text()))


@pytest.fixture(scope="module")
def prompt(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The bench's small run on the local cloud as it is."""
    return one_at_a_time(tmp_path_factory.mktemp("prompt"))


def test_no_handler_on_a_jobs_path_spends_any_time_in_time_sleep(prompt: dict[str, Any]) -> None:
    # Given a job through the local cloud, which counts the seconds each handler's invocations spend in time.sleep
    # Then none did: every second a handler sleeps on this path is a second every user waits, on any machine
    asleep = prompt["metrics"]["handler_seconds_asleep_one_at_a_time"]
    assert asleep["value"] == 0, prompt["details"]["one_at_a_time"]["asleep_seconds_by_handler"]
    assert prompt["metrics"]["jobs_succeeded_one_at_a_time"]["value"] == 1, prompt["details"]


def test_a_late_terminal_event_shows_in_the_overhead_a_client_sees(prompt: dict[str, Any], tmp_path: Path) -> None:
    # Given the bench on the local cloud as it is, and on one that delivers each job's last Batch event 3 s late
    # (Batch's stoppedAt, which the old figure stopped at, does not move)
    late = one_at_a_time(tmp_path, "--hold-terminal-events", str(HOLD_SECONDS))
    on_time = prompt["metrics"]["overhead_seconds_median_one_at_a_time"]
    held = late["metrics"]["overhead_seconds_median_one_at_a_time"]
    # Then the overhead a polling client sees grows by at least the delay
    assert held["value"] >= HOLD_SECONDS, held
    assert held["value"] > on_time["value"], (on_time, held)
