"""While `gpupilot submit --wait` waits, stderr says what the job does, why it waits and for how long; stdout
prints what it always printed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.e2e.conftest import RunningCloud

pytestmark = pytest.mark.e2e
NO_CAPACITY = {"instance_types": {"g4dn.xlarge": {"capacity": "none"}}, "jobs": {"runtime_seconds": 1}}


def test_submit_wait_shows_status_changes_and_the_wait_reason_on_stderr(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given the cheapest GPU type has no capacity, so Batch says so while the job is RUNNABLE, and it falls back
    cloud = cloud_factory(NO_CAPACITY)

    # When submitting and waiting through the CLI (stderr is a pipe: plain lines)
    result = cloud.cli("submit", "--name", "progress", "--image", "nvidia/cuda:12.4.1-base-ubuntu22.04",
                       "--stuck-after-minutes", "0.05", "--wait", "--", "nvidia-smi", "-L")  # fmt: skip

    # Then it succeeds, and stderr has one line per change, each naming the job, its status and the time waited
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    job_id = lines[0].split()[1]
    assert all(line.startswith(f"job {job_id}  ") and " s" in line for line in lines)
    statuses = [line.split("  ")[1] for line in lines]
    assert statuses[-1] == "SUCCEEDED" and "RUNNABLE" in statuses and "RUNNING" in statuses
    # And it said why it waited on its first choice, in Batch's words (the fallback comes within seconds of them)
    assert any("waiting: " in line and "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY" in line for line in lines), lines
    # And stdout is the timeline and the summary, as before, with no progress line in it
    assert "SUCCEEDED" in result.stdout and "cost" in result.stdout
    assert f"job {job_id}  " not in result.stdout
    assert result.stdout.splitlines()[0].lstrip().split()[1] == "SUBMITTED"
    # And in the timeline, the first choice's reasons go under its own lines, never under the fallback's: each
    # reason is said once, before the fallback's first line
    timeline = result.stdout.splitlines()
    fallback = next(i for i, line in enumerate(timeline) if "PROVISIONING" in line and "g4dn.xlarge" not in line)
    about_first = [i for i, line in enumerate(timeline) if "waiting" in line and "[g4dn.xlarge]" in line]
    assert about_first and max(about_first) < fallback, result.stdout
    reasons = [line.split(": ", 1)[1] for line in timeline if line.lstrip().startswith("waiting")]
    assert len(reasons) == len(set(reasons)), result.stdout
