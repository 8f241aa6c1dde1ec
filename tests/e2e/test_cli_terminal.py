"""The CLI at a terminal (a pseudo-terminal, 80 columns): submit shows its plan and asks before submitting, and
tables fit the terminal's width."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.e2e.conftest import RunningCloud
from tests.e2e.terminal import COLUMNS, Terminal

pytestmark = pytest.mark.e2e
QUESTION = "Submit this job? [Y/n] "
JOB = ["--name", "asked", "--image", "nvidia/cuda:12.4.1-base-ubuntu22.04", "--", "nvidia-smi", "-L"]


def test_at_a_terminal_submit_shows_the_first_choice_price_and_fallbacks_then_asks_and_submits_on_yes(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a local cloud
    cloud = cloud_factory({"jobs": {"runtime_seconds": 1}})

    # When submitting at a terminal and answering yes
    terminal = Terminal(cloud, "submit", *JOB)
    before = terminal.read_until(QUESTION)
    terminal.type("y\n")
    code = terminal.finish()

    # Then the plan came before the question: the first choice with its price for this job, and the fallbacks
    assert QUESTION in before, before
    asked = before[: before.index(QUESTION)]
    assert "first choice  " in asked and "/h for this job" in asked and "fallbacks     " in asked
    # And the job was submitted, and the same summary said again
    assert code == 0, terminal.shown
    after = terminal.shown[terminal.shown.index(QUESTION) :]
    assert "submitted " in after and "first choice  " in after
    assert len(cloud.api.request("GET", "/jobs").body["jobs"]) == 1


def test_at_a_terminal_answering_no_submits_nothing(cloud_factory: Callable[..., RunningCloud]) -> None:
    cloud = cloud_factory({"jobs": {"runtime_seconds": 1}})
    terminal = Terminal(cloud, "submit", *JOB)
    terminal.read_until(QUESTION)
    terminal.type("n\n")
    assert terminal.finish() == 0
    assert "not submitted" in terminal.shown
    assert cloud.api.request("GET", "/jobs").body["jobs"] == []


def test_at_a_terminal_yes_submits_without_asking(cloud_factory: Callable[..., RunningCloud]) -> None:
    cloud = cloud_factory({"jobs": {"runtime_seconds": 1}})
    terminal = Terminal(cloud, "submit", "--yes", *JOB)
    assert terminal.finish() == 0
    assert QUESTION not in terminal.shown and "submitted " in terminal.shown


def test_at_80_columns_the_plan_fits_the_terminal_and_wide_shows_it_in_full(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a local cloud, and a plan whose why column is longer than 80 columns
    cloud = cloud_factory()
    plan = ["plan", "--name", "fits", "--image", "img:1", "--", "true"]

    # When the plan is printed at an 80-column terminal, then with --wide
    fitted = Terminal(cloud, *plan)
    assert fitted.finish() == 0
    wide = Terminal(cloud, "--wide", *plan)
    assert wide.finish() == 0

    # Then every fitted line is at most 80 columns, each candidate's why under its row, and --wide goes beyond
    lines = [line for line in fitted.shown.splitlines() if line.strip()]
    assert max(map(len, lines)) <= COLUMNS, fitted.shown
    assert lines[0].split()[:3] == ["#", "GPU", "type"] and lines[3].startswith("    why: $"), fitted.shown
    assert max(map(len, wide.shown.splitlines())) > COLUMNS


def test_at_80_columns_the_job_list_fits_cutting_only_long_names(cloud_factory: Callable[..., RunningCloud]) -> None:
    # Given a job whose name is the longest the API takes
    cloud = cloud_factory()
    long_name = "n" * 128
    job_id = cloud.api.request("POST", "/jobs", {"name": long_name, "image": "img:1", "command": ["true"]}).body[
        "job_id"
    ]

    # When the list is printed at an 80-column terminal, then with --wide
    fitted = Terminal(cloud, "list")
    assert fitted.finish() == 0
    wide = Terminal(cloud, "--wide", "list")
    assert wide.finish() == 0

    # Then every line fits, the job id is whole and the name is cut; --wide shows the name in full
    lines = [line for line in fitted.shown.splitlines() if line.strip()]
    assert max(map(len, lines)) <= COLUMNS, fitted.shown
    row = next(line for line in lines if line.startswith(job_id))
    assert "…" in row.split()[1] and "(--wide for the full name)" in fitted.shown
    assert long_name in wide.shown
