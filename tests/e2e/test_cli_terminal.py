"""The CLI at a terminal (a pseudo-terminal, 80 columns): submit shows its plan and asks before submitting, and
tables fit the terminal's width."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import termios
import time
from collections.abc import Callable

import pytest

from tests.e2e.conftest import GPUPILOT, PATIENCE_SECONDS, RunningCloud

pytestmark = pytest.mark.e2e
COLUMNS = 80
QUESTION = "Submit this job? [Y/n] "
JOB = ["--name", "asked", "--image", "nvidia/cuda:12.4.1-base-ubuntu22.04", "--", "nvidia-smi", "-L"]


class Terminal:
    """A command run at a pseudo-terminal of COLUMNS columns: what it shows, and what is typed into it."""

    def __init__(self, cloud: RunningCloud, *args: str) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, COLUMNS, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        env |= {"GPUPILOT_ENDPOINT": cloud.api_url, "TERM": "xterm"}
        self.process = subprocess.Popen([GPUPILOT, *args], stdin=slave, stdout=slave, stderr=slave, env=env)
        os.close(slave)
        self.shown = ""

    def read_until(self, text: str, timeout: float = PATIENCE_SECONDS) -> str:
        """What the terminal shows once `text` appears (or the command ends)."""
        deadline = time.monotonic() + timeout
        while text not in self.shown and time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:
                try:
                    self.shown += os.read(self.master, 4096).decode(errors="replace").replace("\r\n", "\n")
                except OSError:  # the command ended and closed the terminal
                    break
        return self.shown

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def finish(self, timeout: float = PATIENCE_SECONDS) -> int:
        """Everything the command shows until it ends (its side of the terminal closed), then its exit code."""
        self.read_until("\0never\0", timeout=timeout)
        code = self.process.wait(timeout=timeout)
        os.close(self.master)
        return code


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

    # Then every fitted line is at most 80 columns, each candidate on one line, and --wide goes beyond
    lines = [line for line in fitted.shown.splitlines() if line.strip()]
    assert max(map(len, lines)) <= COLUMNS, fitted.shown
    assert lines[0].split()[:3] == ["#", "instance", "type"] and "(--wide for the full why)" in fitted.shown
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
