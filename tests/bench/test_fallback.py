"""The fallback bench can fail: a workflow that waits out its start wait before diagnosing shows in its figure."""

from __future__ import annotations

import pytest

from bench import fallback

pytestmark = pytest.mark.bench
STUCK_AFTER_MINUTES = 0.2  # 12 s


def test_a_workflow_that_waits_for_its_timeout_moves_on_only_after_it() -> None:
    # Given one job whose first choice Batch has no capacity for, on the workflow as it is, and on the old path
    # (Batch's verdict does not resume the start wait), both with a 12 s stuck_after
    fast = fallback.in_own_process(1, stuck_after_minutes=STUCK_AFTER_MINUTES)
    old = fallback.in_own_process(1, stuck_after_minutes=STUCK_AFTER_MINUTES, fast=False)
    # Then the old path reaches the next attempt no sooner than its timeout (less a second: event times are whole
    # seconds), and the workflow as it is reaches it sooner than that
    waited = STUCK_AFTER_MINUTES * 60 - 1
    assert fallback.worst(old, "next_attempt") >= waited, old
    assert fallback.worst(fast, "next_attempt") < fallback.worst(old, "next_attempt"), (fast, old)
