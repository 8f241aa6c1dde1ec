"""The bad-host bench can fail: without quarantine, the bad host keeps failing jobs until they run out."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from bench import bad_host

pytestmark = pytest.mark.bench
# Enough jobs to keep the pool busy past the bad host's second hold (10 s a failure, 4 s a job, 3 good hosts).
JOBS = 24
# What the counts need (each scenario's jobs end in under a minute here): well inside the test's own timeout even with
# the sweep the bench asks for after it.
WAIT_SECONDS = 120


def test_without_quarantine_the_bad_host_fails_more_jobs() -> None:
    # Given one bad host in four, and GPU Pilot as it is / one that never quarantines, each in a local cloud of its
    # own, side by side (each scenario is mostly waiting for its jobs)
    with ThreadPoolExecutor(max_workers=2) as pool:
        running = pool.submit(bad_host.in_own_process, JOBS, timeout=WAIT_SECONDS)
        unquarantined = bad_host.in_own_process(JOBS, quarantine=False, timeout=WAIT_SECONDS)
        quarantined = running.result()
    # Then with quarantine the host fails two jobs and is drained soon after; without it, it fails more
    assert quarantined["attempts_on_bad_hosts"] == 2 and len(quarantined["seconds_second_failure_to_drain"]) == 1
    assert unquarantined["attempts_on_bad_hosts"] > quarantined["attempts_on_bad_hosts"], unquarantined
    assert unquarantined["seconds_second_failure_to_drain"] == []
