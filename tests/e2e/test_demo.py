"""`gpupilot demo` (what `make demo` runs) ends with a SUCCEEDED CUDA job and its cost, also in a world where its
first choice has no capacity (it falls back), and with --json as one JSON document."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from gpupilot.cli.demo import CONSOLE_HINT
from tests.e2e.conftest import GPUPILOT

pytestmark = pytest.mark.e2e


def test_the_demo_runs_a_cuda_job_to_success_and_shows_its_cost(tmp_path: pytest.TempPathFactory) -> None:
    result = subprocess.run([GPUPILOT, "demo"], capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "listening on http://127.0.0.1:" in result.stdout
    assert "status     SUCCEEDED" in result.stdout
    assert "cost       $" in result.stdout
    assert "GPU type   g4dn.xlarge (T4, on-demand)" in result.stdout
    # And it ends by saying how to open the console
    assert result.stdout.rstrip().endswith(CONSOLE_HINT)


def test_the_demo_in_a_world_without_capacity_for_its_first_choice_falls_back_and_prints_one_json_document(
    tmp_path: Path,
) -> None:
    # Given a world where the demo's first choice (the T4) has no capacity anywhere
    world = tmp_path / "world.json"
    world.write_text(
        json.dumps({"instance_types": {"g4dn.xlarge": {"capacity": "none"}}, "jobs": {"runtime_seconds": 1}})
    )

    # When the demo runs with --json
    result = subprocess.run(
        [GPUPILOT, "demo", "--json", "--world", str(world)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
        check=False,
    )

    # Then its job was diagnosed on the T4 within the demo's wait, fell back and SUCCEEDED
    assert result.returncode == 0, result.stdout + result.stderr
    shown = json.loads(result.stdout)  # stdout is one JSON document, and nothing else
    job = shown["job"]
    assert job["status"] == "SUCCEEDED"
    first, last = job["attempts"][0], job["attempts"][-1]
    assert (first["instance_type"], first["diagnosis"]["category"]) == ("g4dn.xlarge", "INSUFFICIENT_CAPACITY")
    assert last["instance_type"] != "g4dn.xlarge" and last["status"] == "SUCCEEDED"
    assert shown["plan"]["candidates"][0]["instance_type"] == "g4dn.xlarge"
    assert result.stderr == ""
