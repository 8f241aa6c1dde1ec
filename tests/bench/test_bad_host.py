"""The bad-host bench can fail: without quarantine, the bad host keeps failing jobs until they run out."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from bench import bad_host

pytestmark = pytest.mark.bench
# Enough jobs to keep the pool busy past the bad host's second hold (10 s a failure, 4 s a job, 3 good hosts).
JOBS = 24
# How long the scenarios wait for their jobs (they end in under a minute on an idle machine).
WAIT_SECONDS = 240
# The quarantined run's hold: each failure holds the bad host ten minutes of the local cloud's clock, which the bench
# moves past once, at its first failure (its jobs then run five minutes of the clock, which it moves too). Its third
# failure cannot come before a sweep has had ten minutes to drain it, however busy the machine: with quarantine it
# fails exactly two jobs.
LONG_HOLD_SECONDS = 600


def test_without_quarantine_the_bad_host_fails_more_jobs() -> None:
    # Given one bad host in four, and GPU Pilot as it is (the host held ten minutes a failure, the clock moved past
    # the first) / one that never quarantines (the world's 10 s hold), each in a local cloud of its own, side by side
    # (each scenario is mostly waiting for its jobs)
    with ThreadPoolExecutor(max_workers=2) as pool:
        running = pool.submit(bad_host.in_own_process, JOBS, timeout=WAIT_SECONDS, hold_seconds=LONG_HOLD_SECONDS)
        unquarantined = bad_host.in_own_process(JOBS, quarantine=False, timeout=WAIT_SECONDS)
        quarantined = running.result()
    # Then with quarantine the host fails two jobs and is drained soon after; without it, it fails more
    assert quarantined["attempts_on_bad_hosts"] == 2 and len(quarantined["seconds_second_failure_to_drain"]) == 1
    assert unquarantined["attempts_on_bad_hosts"] > quarantined["attempts_on_bad_hosts"], unquarantined
    assert unquarantined["seconds_second_failure_to_drain"] == []
