"""The checkpoint bench can fail: an agent that never restores a checkpoint survives no reclaim, and its jobs lose
everything each reclaimed attempt ran."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from bench import checkpoint

pytestmark = pytest.mark.bench
JOBS = 1  # of each kind: one reclaim each is what the counts need


def test_without_the_restore_no_reclaim_is_survived_and_a_reclaim_loses_what_the_attempt_ran() -> None:
    # Given a checkpointing and a plain spot-first job reclaimed mid-run, with the agent as it is and with an agent
    # that skips the restore, each in a local cloud of its own, side by side (each scenario is mostly waiting)
    with ThreadPoolExecutor(max_workers=2) as pool:
        running = pool.submit(checkpoint.in_own_process, JOBS)
        skipped = checkpoint.in_own_process(JOBS, restore=False)
        restored = running.result()

    # Then with the restore the checkpointing job survives its reclaim, losing at most a write's interval plus the
    # notice, far less than the plain job
    with_checkpoint, plain = restored["checkpoint"], restored["none"]
    assert (with_checkpoint["reclaims"], with_checkpoint["survived"]) == (1, 1), restored
    bound = checkpoint.WRITES_EVERY_SECONDS + checkpoint.NOTICE_SECONDS
    assert checkpoint.per_reclaim(with_checkpoint) <= bound < checkpoint.per_reclaim(plain), restored
    # And without it the same job survives nothing and loses as much as the plain one
    assert (skipped["checkpoint"]["reclaims"], skipped["checkpoint"]["survived"]) == (1, 0), skipped
    assert checkpoint.per_reclaim(skipped["checkpoint"]) > bound, skipped
