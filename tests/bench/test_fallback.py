"""The fast fallback acts on Batch's verdict, and the fallback bench can tell it from a wait that timed out."""

from __future__ import annotations

import pytest

from bench import fallback

pytestmark = pytest.mark.bench
# Far more than a job takes to fall back on a loaded machine, far less than the default start wait (15 minutes):
# a job that moves on within this time was moved on by Batch's verdict, whatever the machine's speed.
JOB_TIMEOUT_SECONDS = 150
OLD_PATH_STUCK_AFTER_MINUTES = 0.2  # 12 s


def test_batchs_verdict_moves_the_job_to_its_next_attempt_long_before_its_start_wait_could_time_out() -> None:
    # Given one job whose first choice Batch has no capacity for, with the default start wait (15 minutes, ten
    # times this test's patience for the job)
    fast = fallback.in_own_process(1, timeout=JOB_TIMEOUT_SECONDS)
    (job,) = fast["jobs"]
    # Then its first start wait ended on Batch's verdict (resumed with it, not timed out), and the job fell back
    # to its next attempt and succeeded
    assert fast["stuck_after_minutes"] is None, fast
    assert job["first_start_wait_ended_by"] == fallback.VERDICT, job
    assert job["status"] == "SUCCEEDED" and job["attempts"] == 2 and job["next_attempt"] is not None, job


def test_a_job_second_in_a_blocked_queue_moves_on_by_batch_s_verdict_on_the_job_at_its_head() -> None:
    # Given one job queued behind a job that may run on the first choice alone, which heads the queue once Batch has
    # said its verdict of it (AWS says it of the head alone), with the default start wait
    behind = fallback.in_own_process(1, timeout=JOB_TIMEOUT_SECONDS, behind=True)
    (job,) = behind["jobs"]
    # Then its first start wait ended on that verdict, and it fell back to its next attempt and succeeded
    assert behind["behind"] and behind["stuck_after_minutes"] is None, behind
    assert job["first_start_wait_ended_by"] == fallback.VERDICT, job
    assert job["status"] == "SUCCEEDED" and job["attempts"] == 2 and job["next_attempt"] is not None, job


def test_the_old_path_is_seen_to_wait_out_its_start_wait() -> None:
    # Given the same job on the old path (Batch's verdict does not resume the start wait), with a 12 s start wait
    old = fallback.in_own_process(1, stuck_after_minutes=OLD_PATH_STUCK_AFTER_MINUTES, fast=False)
    (job,) = old["jobs"]
    # Then the bench sees its start wait time out, and the next attempt come no sooner than the timeout (less a
    # second: event times are whole seconds)
    assert job["first_start_wait_ended_by"] == fallback.TIMEOUT, job
    assert job["status"] == "SUCCEEDED" and job["next_attempt"] >= OLD_PATH_STUCK_AFTER_MINUTES * 60 - 1, job
