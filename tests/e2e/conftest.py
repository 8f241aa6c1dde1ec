"""End-to-end layer: `gpupilot serve` in a subprocess, driven through its HTTP API and the CLI. The subprocess is forked
from a warm interpreter that has its libraries imported already (tests/e2e/warm.py), and runs the command's own entry
point."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gpupilot.cli.client import ApiClient
from tests.e2e.warm import WarmLauncher, WarmProcess, WarmUnavailable

GPUPILOT = str(Path(sys.executable).parent / "gpupilot")
# How long a test waits for a condition (a local cloud ready, a job's status, a finding, a line of output, an answer)
# before it fails: what a 2-core machine busy with other work needs (a local cloud that starts in 10 s on an idle one
# took over 90 s beside two CPU-bound processes), not what an idle one takes. A test that passes waits only as long as
# it must.
PATIENCE_SECONDS = 300
READY_TIMEOUT_SECONDS = PATIENCE_SECONDS


@dataclass
class RunningCloud:
    api_url: str
    aws_url: str
    process: subprocess.Popen[str] | WarmProcess
    log_file: Path

    @functools.cached_property
    def api(self) -> ApiClient:
        return ApiClient(self.api_url, timeout=PATIENCE_SECONDS)

    def cli(self, *args: str, timeout: float = PATIENCE_SECONDS) -> subprocess.CompletedProcess[str]:
        """Run the real `gpupilot` console script against this cloud."""
        env = os.environ | {"GPUPILOT_ENDPOINT": self.api_url}
        return subprocess.run([GPUPILOT, *args], capture_output=True, text=True, timeout=timeout, env=env, check=False)

    def wait_for(self, job_id: str, statuses: set[str], timeout: float = PATIENCE_SECONDS) -> dict[str, Any]:
        """The job once it reaches one of `statuses`; fails loudly, with the job, at the deadline."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.api.request("GET", f"/jobs/{job_id}").body
            if job["status"] in statuses:
                return dict(job)
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} did not reach {sorted(statuses)} in {timeout:.0f} s: {job}")
            time.sleep(0.3)

    def until(self, what: str, found: Callable[[], Any], timeout: float = PATIENCE_SECONDS, every: float = 0.3) -> Any:
        """What `found()` answers once it answers something truthy; fails, saying `what`, at the deadline."""
        deadline = time.monotonic() + timeout
        while True:
            answer = found()
            if answer:
                return answer
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not within {timeout:.0f} s (last: {answer!r})")
            time.sleep(every)

    def clock(self) -> dict[str, Any]:
        """The local cloud's time: `{now, advanced_seconds}`."""
        answer = self.api.request("GET", "/local/clock")
        assert answer.status == 200, answer.body
        return dict(answer.body)

    def advance(self, seconds: float) -> dict[str, Any]:
        """Move the local cloud's clock `seconds` ahead: whatever waits on it (the fleet, the workflow, the sweep's
        schedule, the handlers' graces) sees that much time pass at once."""
        answer = self.api.request("POST", "/local/clock", {"advance_seconds": seconds})
        assert answer.status == 200, answer.body
        return dict(answer.body)


def start_cloud(
    tmp_path: Path,
    world: dict[str, Any] | None,
    speedup: float = 1.0,
    sweep_seconds: float = 0,
    timings: str = "local",
) -> RunningCloud:
    args = [GPUPILOT, "serve", "--port", "0", "--speedup", str(speedup), "--sweep-seconds", str(sweep_seconds),
            "--timings", timings]  # fmt: skip
    if world is not None:
        world_file = tmp_path / "world.json"
        world_file.write_text(json.dumps(world))
        args += ["--world", str(world_file)]
    log_file = tmp_path / "cloud.log"
    args += ["--log-file", str(log_file)]
    # Its output goes to a file, not a pipe: a pipe nobody reads fills up and blocks the server.
    output = tmp_path / "serve.out"
    try:
        process: subprocess.Popen[str] | WarmProcess = warm_launcher().spawn(args[1:], output)
    except WarmUnavailable as why:
        print(f"starting gpupilot serve itself: {why}", file=sys.stderr)
        with output.open("w") as sink:
            process = subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        printed = output.read_text()
        api = re.search(r"listening on (\S+)", printed)
        aws = re.search(r"aws endpoint (\S+)", printed)
        if api and aws:
            return RunningCloud(api.group(1), aws.group(1), process, log_file)
        time.sleep(0.1)
    process.kill()
    raise AssertionError("gpupilot serve did not become ready:\n" + output.read_text())


_launcher: list[WarmLauncher] = []


def warm_launcher() -> WarmLauncher:
    """This test worker's warm interpreter (tests/e2e/warm.py), started on first use."""
    if not _launcher:
        _launcher.append(WarmLauncher(Path(tempfile.mkdtemp(prefix="gpupilot-warm-"))))
    return _launcher[0]


def stop_cloud(cloud: RunningCloud) -> None:
    """SIGTERM, as a user's Ctrl-C would; a server slow to exit on a loaded CI machine is then killed."""
    cloud.process.terminate()
    try:
        cloud.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        cloud.process.kill()
        cloud.process.wait(timeout=10)


@pytest.fixture
def cloud_factory(tmp_path: Path) -> Iterator[Callable[..., RunningCloud]]:
    started: list[RunningCloud] = []

    def factory(
        world: dict[str, Any] | None = None, speedup: float = 1.0, sweep_seconds: float = 0, timings: str = "local"
    ) -> RunningCloud:
        cloud = start_cloud(tmp_path, world, speedup, sweep_seconds, timings)
        started.append(cloud)
        return cloud

    yield factory
    for cloud in started:
        stop_cloud(cloud)


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCloud]:
    """One default-world cloud shared by a module's tests."""
    running = start_cloud(tmp_path_factory.mktemp("cloud"), None)
    yield running
    stop_cloud(running)
