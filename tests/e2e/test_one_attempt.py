"""One attempt at a time, through the local cloud's HTTP API and the CLI: during a fallback, `status` describes the
attempt the job is on and lists the one it left under its own row; a job waiting for a Capacity Block another job
holds waits for the block (no vCPU cap), and no answer ever shows a job's status apart from its attempt's; `status
--wait` says at once how long the job has waited and why, and a plain line only when something changed.

One local cloud for the module: g4dn.xlarge has no spot capacity (a spot-first job falls back to on-demand), a
one-instance p5.48xlarge Capacity Block is active (two jobs take turns on it), and g6.xlarge instances never
register with ECS (a job waits there with no reason from Batch)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import pytest

from gpupilot.cli import render
from tests.e2e.conftest import GPUPILOT, RunningCloud, start_cloud, stop_cloud

pytestmark = pytest.mark.e2e
IMAGE = "nvidia/cuda:12.4.1-base-ubuntu22.04"
JOB = {"image": IMAGE, "command": ["nvidia-smi", "-L"]}
WORLD = {
    "instance_types": {"g6.xlarge": {"ecs_agent": "never_registers"}},
    "spot": {"g4dn.xlarge": {"capacity": "none"}},
    "capacity_reservations": [
        {"instance_type": "p5.48xlarge", "zone": "us-east-1a", "count": 1, "hours": 24, "capacity_block": True,
         "upfront_usd": 2000},
    ],
    "jobs": {"runtime_seconds": 20},
}  # fmt: skip
FINISHED = {"SUCCEEDED", "FAILED", "CANCELLED"}
# The job statuses an attempt's status may stand beside (an attempt being submitted has no Batch status yet; the
# workflow moves on from a failed one, or fails the job).
AGREES = {
    "SUBMITTED": {"PROVISIONING", "RUNNABLE"},
    "PENDING": {"RUNNABLE"},
    "RUNNABLE": {"RUNNABLE"},
    "STARTING": {"STARTING"},
    "RUNNING": {"RUNNING"},
    "SUCCEEDED": {"SUCCEEDED"},
    "FAILED": {"SELECTING", "FAILED"},
    "NOT_SUBMITTED": {"SELECTING", "FAILED"},
}


@dataclass
class Module:
    cloud: RunningCloud
    waiting_job: str = field(default="")


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Module]:
    """The module's cloud, and a job submitted first that waits on g6.xlarge with no reason from Batch (long after
    the other tests, by the time `status --wait` follows it)."""
    running = start_cloud(tmp_path_factory.mktemp("one-attempt"), WORLD)
    waiting = JOB | {"name": "unexplained", "instance_types": ["g6.xlarge"], "stuck_after_minutes": 10}
    yield Module(running, running.api.request("POST", "/jobs", waiting).body["job_id"])
    stop_cloud(running)


def current(view: dict[str, Any]) -> dict[str, Any] | None:
    """The entry of the attempt the job is on (None while that attempt's pool is provisioned)."""
    number, attempts = view.get("attempt"), view["attempts"]
    return attempts[number - 1] if number and number <= len(attempts) else None


def disagreements(views: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(job status, attempt status) of each answer whose job and current attempt disagree. An attempt Batch ended
    shows its outcome with its cost: the event that ends it prices it a write later, and until then the job is
    still where Batch's earlier events put it."""
    return [
        (view["status"], attempt["status"])
        for view in views
        if (attempt := current(view)) is not None and view["status"] not in agreeing(attempt)
    ]


def agreeing(attempt: dict[str, Any]) -> set[str]:
    """The job statuses that may stand beside the attempt."""
    if attempt["status"] in FINISHED and attempt.get("cost") is None:
        return AGREES[attempt["status"]] | {"RUNNABLE", "STARTING", "RUNNING"}
    return AGREES[attempt["status"]]


def watch(cloud: RunningCloud, job_ids: list[str], timeout: float = 180) -> Iterator[list[dict[str, Any]]]:
    """The jobs' answers, read together as often as the API answers, until every job has ended."""
    deadline = time.monotonic() + timeout
    while True:
        answers = [cloud.api.request("GET", f"/jobs/{job_id}") for job_id in job_ids]
        assert all(answer.status == 200 for answer in answers), [(a.status, a.body) for a in answers]
        views = [answer.body for answer in answers]
        yield views
        if all(view["status"] in FINISHED for view in views):
            return
        assert time.monotonic() < deadline, f"the jobs did not end in {timeout:.0f} s: {views}"
        time.sleep(0.05)


def rows(shown: str) -> dict[str, str]:
    """`gpupilot status`'s rows by label (a value wrapped under its label joined back)."""
    found: dict[str, str] = {}
    label = ""
    for line in shown.splitlines():
        head = re.match(r"^(\S.*?)\s{2,}(.*)$", line)
        if head:
            label = head.group(1)
            found[label] = head.group(2)
        elif label:
            found[label] += " " + line.strip()
    return found


def test_during_a_fallback_status_describes_the_attempt_the_job_is_on_and_lists_the_one_it_left(
    module: Module,
) -> None:
    # Given a spot-first job on g4dn.xlarge, which has no spot capacity
    cloud = module.cloud
    request = JOB | {"name": "spot-first", "instance_types": ["g4dn.xlarge"], "capacity": "spot-first",
                     "ignore_unavailable": True}  # fmt: skip
    job_id = cloud.api.request("POST", "/jobs", request).body["job_id"]

    # When it is watched through its fallback to on-demand, and its status shown while attempt 2 runs
    seen: list[dict[str, Any]] = []
    provisioning: dict[str, Any] | None = None
    running = ""
    for [view] in watch(cloud, [job_id]):
        seen.append(view)
        if provisioning is None and view["status"] == "PROVISIONING" and view.get("attempt") == 2:
            provisioning = view
        if not running and view["status"] == "RUNNING" and view.get("attempt") == 2:
            shown = cloud.cli("status", job_id)
            assert shown.returncode == 0, shown.stderr
            running = shown.stdout
    final = cloud.cli("status", job_id).stdout

    # Then while attempt 2's pool was made, the API was on attempt 2, on-demand, and the status rows said so, with
    # neither the spot attempt's queue nor its price as the job's
    assert provisioning is not None, json.dumps(seen[-1], indent=1)
    assert (provisioning["capacity_type"], provisioning["instance_type"]) == ("on-demand", "g4dn.xlarge")
    [left] = provisioning["attempts"]
    said = rows(render.job_summary(provisioning))
    assert said["GPU type"] == "g4dn.xlarge (T4, on-demand)"
    assert said["queue"] == "-" and said["queue"] != left["job_queue"]
    assert " = $" not in said.get("cost", "")
    # And while attempt 2 ran, `gpupilot status` described it, its cost not the spot attempt's product
    said = rows(running)
    [_, on_demand] = seen[-1]["attempts"]
    assert (said["GPU type"], said["queue"]) == ("g4dn.xlarge (T4, on-demand)", on_demand["job_queue"])
    assert " = $" not in said["cost"], said["cost"]
    assert said["attempt 1"].startswith("g4dn.xlarge spot  FAILED")
    # And once it ended, its cost is the sum of its attempts, each on its own row
    said = rows(final)
    assert said["GPU type"] == "g4dn.xlarge (T4, on-demand)"
    assert said["cost"].endswith("the sum of its 2 priced attempts (each below)")
    # And no answer showed the job's status apart from its attempt's
    assert disagreements(seen) == []


def test_a_job_waiting_for_a_capacity_block_another_job_holds_waits_for_it_and_never_disagrees_with_its_attempt(
    module: Module,
) -> None:
    # Given two jobs for the one instance of the Capacity Block, the second submitted while the first runs there
    cloud = module.cloud
    first = cloud.api.request("POST", "/jobs", JOB | {"name": "first", "gpus": 8, "capacity": "reserved"}).body
    cloud.wait_for(first["job_id"], {"RUNNING"} | FINISHED, 120)
    second = cloud.api.request("POST", "/jobs", JOB | {"name": "second", "gpus": 8, "capacity": "reserved"}).body
    ids = [first["job_id"], second["job_id"]]

    # When both are watched to their end, and the second's status is shown while it waits for the first
    seen: list[dict[str, Any]] = []
    waiting = ""
    for views in watch(cloud, ids):
        seen += views
        if not waiting and [v["status"] for v in views] == ["RUNNING", "RUNNABLE"] and current(views[1]):
            shown = cloud.cli("status", ids[1])
            assert shown.returncode == 0, shown.stderr
            waiting = shown.stdout

    # Then the second waited for the block's instance, which the first held: not a vCPU cap of its pool
    assert waiting, "the second job was never seen waiting while the first ran"
    said = rows(waiting)
    assert said["status"] == "RUNNABLE", waiting
    assert said["diagnosis"].startswith("WAITING_FOR_RESERVATION: every instance of reservation cr-"), waiting
    assert "MAX_VCPUS_REACHED" not in waiting
    # And both ran there, one after the other, and succeeded
    assert [v["status"] for v in seen[-2:]] == ["SUCCEEDED", "SUCCEEDED"]
    assert {v["attempts"][0]["capacity_type"] for v in seen[-2:]} == {"capacity-block"}
    # And no answer showed a job's status apart from its attempt's (RUNNING beside SUCCEEDED, say)
    assert disagreements(seen) == []


def seconds_in(text: str) -> int:
    """`1 min 05 s` -> 65, `42 s` -> 42, `2 h 07 min` -> 7620."""
    found = re.fullmatch(r"(?:(\d+) h )?(?:(\d+) min ?)?(?:(\d+) s)?", text.strip())
    assert found and any(found.groups()), text
    hours, minutes, seconds = (int(part or 0) for part in found.groups())
    return hours * 3600 + minutes * 60 + seconds


def test_status_wait_says_at_once_how_long_the_job_has_waited_and_why_and_prints_a_line_only_on_a_change(
    module: Module, tmp_path: Path
) -> None:
    # Given a job RUNNABLE on g6.xlarge, whose instances never register (Batch gives no reason), for 12 s at least
    cloud, job_id = module.cloud, module.waiting_job
    view = cloud.wait_for(job_id, {"RUNNABLE"}, 120)
    entered = datetime.fromisoformat(render.status_since(view).replace("Z", "+00:00"))  # type: ignore[union-attr]
    while True:
        response = cloud.api.request("GET", f"/jobs/{job_id}")
        waited = (parsedate_to_datetime(response.headers["date"]) - entered).total_seconds()
        if waited >= 12:
            break
        time.sleep(0.5)

    # When `gpupilot status --wait` follows it for 15 s, its output a file (not a terminal, as in CI)
    out, err = tmp_path / "out", tmp_path / "err"
    environment = os.environ | {"GPUPILOT_ENDPOINT": cloud.api_url}
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen([GPUPILOT, "status", "--wait", job_id], stdout=stdout, stderr=stderr,
                                   env=environment)  # fmt: skip
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.terminate()
            process.wait(timeout=10)
    lines = err.read_text().splitlines()

    # Then its one line came at once with the time the job had waited and why, and nothing since: the job did not
    # change (every 10 s the cause was asked again, and said again by no line)
    assert len(lines) == 1, lines
    head = re.fullmatch(rf"job {job_id}  RUNNABLE  g6\.xlarge \(L4\)  (.+?)  waiting: (.+)", lines[0])
    assert head, lines[0]
    assert seconds_in(head.group(1)) >= 12, lines[0]
    assert head.group(2).startswith("ECS_AGENT_NOT_REGISTERED: "), lines[0]
    # And stdout said the cause once, under the RUNNABLE line
    said = [line for line in out.read_text().splitlines() if line.lstrip().startswith("waiting")]
    assert len(said) == 1 and "ECS_AGENT_NOT_REGISTERED" in said[0], out.read_text()
    assert json.loads(cloud.cli("--json", "status", job_id).stdout)["status"] == "RUNNABLE"
