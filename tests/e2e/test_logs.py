"""`gpupilot logs` through the local cloud's API: what the simulator did, in the attempt's log stream, marked as
simulated (no container runs here), for a finished job and, followed, for a running one."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.e2e.conftest import PATIENCE_SECONDS, RunningCloud

pytestmark = pytest.mark.e2e
SIMULATED = "[gpupilot local cloud: simulated, no container ran]"
JOB = ["--image", "nvidia/cuda:12.4.1-base-ubuntu22.04", "--", "python", "train.py", "--epochs", "3"]


def test_the_logs_of_a_finished_job_are_what_the_simulator_did_marked_as_simulated(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a job that ran and ended with exit code 0
    cloud = cloud_factory({"jobs": {"runtime_seconds": 1}})
    submitted = cloud.cli("--json", "submit", "--name", "logged", "--wait", *JOB)
    assert submitted.returncode == 0, submitted.stderr
    job_id = cloud.api.request("GET", "/jobs").body["jobs"][0]["job_id"]

    # When its logs are printed
    result = cloud.cli("logs", job_id)

    # Then every line is the simulator's, saying so, with the image, the command and the exit code
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines and all(line.startswith(SIMULATED) for line in lines)
    said = "\n".join(lines)
    assert "image nvidia/cuda:12.4.1-base-ubuntu22.04" in said
    assert "command python train.py --epochs 3" in said
    assert "exit code 0" in said
    # And the job's attempt names its stream, under GPU Pilot's prefix in Batch's log group
    attempt = cloud.api.request("GET", f"/jobs/{job_id}").body["attempts"][-1]
    assert attempt["log_stream"].startswith("gpupilot/default/")
    assert f"/aws/batch/job {attempt['log_stream']}" in result.stderr


def test_following_the_logs_of_a_running_job_prints_its_lines_until_it_ends(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a job that runs for a while (it is RUNNING when the logs are asked for)
    cloud = cloud_factory({"jobs": {"runtime_seconds": 6}})
    submitted = cloud.api.request("POST", "/jobs", {"name": "followed", "image": "img:1", "command": ["sleep", "6"]})
    job_id = submitted.body["job_id"]
    running = cloud.wait_for(job_id, {"RUNNING", "SUCCEEDED", "FAILED"})
    assert running["status"] == "RUNNING"

    # When following its logs
    result = cloud.cli("logs", job_id, "--follow", timeout=PATIENCE_SECONDS)

    # Then the run's lines and its end's come, once each, and the CLI stops with the job
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any("command sleep 6" in line for line in lines)
    assert lines[-1].endswith("exit code 0 (the world file's jobs.exit_code)")
    assert len(lines) == len(set(lines))
    assert cloud.api.request("GET", f"/jobs/{job_id}").body["status"] == "SUCCEEDED"
