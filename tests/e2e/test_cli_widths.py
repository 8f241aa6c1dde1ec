"""Every table and status fits an 80-column terminal, through the local cloud: long values wrap under their label
(nothing an id, a status or a price says is cut), and --json keeps every value in full.

One local cloud for the module: home without g4dn.xlarge capacity (a job falls back, so its status lists two
attempts), us-west-2 beside it (the plan's region column and the regions it leaves out), an open reservation (the
reservations table) and a Capacity Block on offer; a job that fell back, one that ran in the reservation, one with
the longest name the API takes, and a sweep."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import PATIENCE_SECONDS, RunningCloud, start_cloud, stop_cloud
from tests.e2e.terminal import COLUMNS, Terminal

pytestmark = pytest.mark.e2e
IMAGE = "nvidia/cuda:12.4.1-base-ubuntu22.04"
WORLD = {
    "instance_types": {"g4dn.xlarge": {"capacity": "none"}},
    "regions": {"us-west-2": {"zones": ["us-west-2a", "us-west-2b"]}},
    "capacity_reservations": [{"instance_type": "g5.xlarge", "zone": "us-east-1a", "count": 2, "hours": 24}],
    "capacity_block_offerings": [
        {"instance_type": "p5.48xlarge", "count": 1, "hours": 24, "starts_in_seconds": 3600, "upfront_usd": 900}
    ],
    "jobs": {"runtime_seconds": 1},
}
JOB = {"image": IMAGE, "command": ["nvidia-smi", "-L"]}
HELP = ("demo", "serve", "submit", "plan", "status", "list", "cancel", "logs", "health", "sweep", "costs",
        "reservations", "reserve")  # fmt: skip


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCloud]:
    running = start_cloud(tmp_path_factory.mktemp("widths"), WORLD)
    yield running
    stop_cloud(running)


@pytest.fixture(scope="module")
def jobs(cloud: RunningCloud) -> dict[str, dict[str, Any]]:
    """The module's jobs once they ended: one that fell back, one in the reservation, one with the longest name."""
    requests = {
        "fell_back": JOB | {"name": "fell-back", "instance_types": ["g4dn.xlarge", "g6.xlarge"]},
        "reserved": JOB | {"name": "reserved", "capacity": "reserved"},
        "long_name": JOB | {"name": "n" * 128},
    }
    submitted = {key: cloud.api.request("POST", "/jobs", body).body["job_id"] for key, body in requests.items()}
    return {key: cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"}, 120) for key, job_id in submitted.items()}


def at_80_columns(cloud: RunningCloud, *args: str) -> str:
    """What the command shows at an 80-column terminal (the pseudo-terminal's size, and COLUMNS=80)."""
    terminal = Terminal(cloud, *args, columns=COLUMNS, environment={"COLUMNS": str(COLUMNS)})
    code = terminal.finish(timeout=PATIENCE_SECONDS)
    assert code == 0, terminal.shown
    return terminal.shown


# What a job printed is shown as it printed it: only the CLI's own lines are held to the terminal's width.
JOB_OUTPUT = "[gpupilot local cloud: simulated, no container ran]"


def too_wide(shown: str) -> list[str]:
    return [line for line in shown.splitlines() if len(line) > COLUMNS and JOB_OUTPUT not in line]


def words(text: str) -> str:
    return " ".join(text.split())


def test_every_command_s_output_fits_80_columns(cloud: RunningCloud, jobs: dict[str, dict[str, Any]]) -> None:
    # Given the module's jobs and a sweep of their pools
    fell_back, reserved = jobs["fell_back"]["job_id"], jobs["reserved"]["job_id"]
    plan = ("plan", "--name", "fits", "--image", IMAGE, "--region", "us-east-1", "--region", "us-west-2", "--", "true")
    commands = {
        "status": ("status", fell_back),
        "status --explain": ("status", reserved, "--explain"),
        "list": ("list",),
        "logs": ("logs", fell_back),
        "plan": plan,
        "costs": ("costs",),
        "costs by capacity type": ("costs", "--group-by", "capacity_type"),
        "costs by job name": ("costs", "--group-by", "job_name"),
        "reservations": ("reservations",),
        "offerings": ("reservations", "--offerings", "--type", "p5.48xlarge"),
        "sweep": ("sweep",),
        "health": ("health",),
        "submit": ("submit", "--yes", "--name", "fits", "--image", IMAGE, "--", "true"),
        **{f"{name} --help": (name, "--help") for name in HELP},
        "--help": ("--help",),
    }

    # When each is shown at an 80-column terminal
    shown = {name: at_80_columns(cloud, *args) for name, args in commands.items()}

    # Then no line of any is wider than 80 columns
    assert {name: too_wide(text) for name, text in shown.items() if too_wide(text)} == {}
    # And what did not fit a row went under it, in full: every candidate's why, the fell-back job's timeline
    planned = json.loads(cloud.cli("--json", *plan).stdout)
    for candidate in planned["candidates"][:10]:
        assert words(f"why: {candidate['why']}") in words(shown["plan"]), candidate["why"]
    timeline = [entry["status"] for entry in jobs["fell_back"]["timeline"]]
    assert words(shown["status"]).count(" -> ") == len(timeline) - 1 and len(jobs["fell_back"]["attempts"]) == 2


def test_json_keeps_every_value_in_full_whatever_the_terminal(
    cloud: RunningCloud, jobs: dict[str, dict[str, Any]]
) -> None:
    # Given the job with the longest name, cut in the 80-column list
    long_name = jobs["long_name"]["name"]
    assert long_name not in at_80_columns(cloud, "list")

    # When the same is asked with --json at that terminal
    listed = json.loads(at_80_columns(cloud, "--json", "list"))
    status = json.loads(at_80_columns(cloud, "--json", "status", jobs["fell_back"]["job_id"]))

    # Then every value is there in full, as the API answers it
    assert long_name in {job["name"] for job in listed["jobs"]}
    assert status["timeline"] == cloud.api.request("GET", f"/jobs/{status['job_id']}").body["timeline"]
