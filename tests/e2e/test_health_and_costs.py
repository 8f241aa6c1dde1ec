"""The scheduled sweep, `health`, `sweep` and `costs` through the local cloud and the CLI."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from tests.e2e.conftest import RunningCloud

pytestmark = pytest.mark.e2e
JOB = {"name": "costed", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"]}


def test_the_local_cloud_runs_the_sweep_on_its_timer(cloud_factory: Callable[..., RunningCloud]) -> None:
    cloud = cloud_factory(sweep_seconds=1)
    deadline = time.monotonic() + 20
    report = cloud.api.request("GET", "/health").body
    while report["swept_at"] is None and time.monotonic() < deadline:
        time.sleep(0.5)
        report = cloud.api.request("GET", "/health").body
    assert report["swept_at"] is not None
    assert report["summary"]["findings"] == 0


def test_sweep_health_and_costs_through_the_cli(cloud_factory: Callable[..., RunningCloud]) -> None:
    # Given a finished job
    cloud = cloud_factory()
    job = cloud.wait_for(cloud.api.request("POST", "/jobs", JOB).body["job_id"], {"SUCCEEDED", "FAILED"})
    today = datetime.now(UTC).date().isoformat()
    # When an operator sweeps, reads health and asks what today cost
    swept = json.loads(cloud.cli("--json", "sweep").stdout)
    health = json.loads(cloud.cli("health", "--json").stdout)
    costs = json.loads(cloud.cli("--json", "costs", "--from", today, "--to", today).stdout)
    table = cloud.cli("costs", "--from", today, "--to", today)
    # Then the sweep ran in the sweep function and its report is the health; the day's cost is the job's
    assert swept["status"] == "COMPLETE" and swept["sweep_id"].startswith("sweep-")
    assert health["sweep_id"] == swept["sweep_id"]
    assert costs["total_usd"] == pytest.approx(job["cost"]["usd"])
    assert costs["days"][0]["by_gpu_type"] == {job["instance_type"]: pytest.approx(job["cost"]["usd"])}
    assert costs["days"][0]["by_job_name"] == {"costed": pytest.approx(job["cost"]["usd"])}
    assert table.returncode == 0 and job["instance_type"] in table.stdout
