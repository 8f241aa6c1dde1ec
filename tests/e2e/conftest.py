"""End-to-end layer: `gpupilot serve` in a subprocess, driven through its HTTP API and the CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gpupilot.client import ApiClient

GPUPILOT = str(Path(sys.executable).parent / "gpupilot")
READY_TIMEOUT_SECONDS = 90


@dataclass
class RunningCloud:
    api_url: str
    aws_url: str
    process: subprocess.Popen[str]
    log_file: Path

    @property
    def api(self) -> ApiClient:
        return ApiClient(self.api_url)

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run the real `gpupilot` console script against this cloud."""
        env = os.environ | {"GPUPILOT_ENDPOINT": self.api_url}
        return subprocess.run([GPUPILOT, *args], capture_output=True, text=True, timeout=timeout, env=env, check=False)

    def wait_for(self, job_id: str, statuses: set[str], timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            job = self.api.request("GET", f"/jobs/{job_id}").body
            if job["status"] in statuses or time.monotonic() > deadline:
                return dict(job)
            time.sleep(0.3)


def start_cloud(
    tmp_path: Path, world: dict[str, Any] | None, speedup: float = 1.0, sweep_seconds: float = 0
) -> RunningCloud:
    args = [GPUPILOT, "serve", "--port", "0", "--speedup", str(speedup), "--sweep-seconds", str(sweep_seconds)]
    if world is not None:
        world_file = tmp_path / "world.json"
        world_file.write_text(json.dumps(world))
        args += ["--world", str(world_file)]
    log_file = tmp_path / "cloud.log"
    args += ["--log-file", str(log_file)]
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("aws endpoint"):
            api = re.search(r"listening on (\S+)", "".join(lines))
            assert api, "".join(lines)
            return RunningCloud(api.group(1), line.split()[-1], process, log_file)
    process.kill()
    raise AssertionError("gpupilot serve did not become ready:\n" + "".join(lines))


@pytest.fixture
def cloud_factory(tmp_path: Path) -> Iterator[Callable[..., RunningCloud]]:
    started: list[RunningCloud] = []

    def factory(world: dict[str, Any] | None = None, speedup: float = 1.0, sweep_seconds: float = 0) -> RunningCloud:
        cloud = start_cloud(tmp_path, world, speedup, sweep_seconds)
        started.append(cloud)
        return cloud

    yield factory
    for cloud in started:
        cloud.process.terminate()
        try:
            cloud.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            cloud.process.kill()


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCloud]:
    """One default-world cloud shared by a module's tests."""
    running = start_cloud(tmp_path_factory.mktemp("cloud"), None)
    yield running
    running.process.terminate()
    running.process.wait(timeout=10)
