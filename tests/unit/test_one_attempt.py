"""A job's view describes one attempt at a time: the attempt it is on (its next one while that one's pool is made),
how that attempt is billed, why it waits, and a status never behind that attempt's."""

from __future__ import annotations

from typing import Any

import pytest

from functions.shared.domain.core.vocabulary import (
    AttemptStatus,
    BatchStatus,
    BilledCapacity,
    CapacityType,
    DiagnosisCategory,
    JobStatus,
    Remedy,
    WaitPhase,
)
from functions.shared.domain.cost.attempts import Cost
from functions.shared.domain.jobs.current import shown_status
from functions.shared.domain.jobs.lifecycle import status_rank
from functions.shared.domain.jobs.records import (
    AttemptRecord,
    DiagnosisOutcome,
    JobRecord,
    NextCandidate,
    TimelineEntry,
    Wait,
)
from functions.shared.domain.jobs.retries import BatchRetry
from functions.shared.domain.jobs.views import job_view
from functions.shared.domain.requests.job_request import JobRequest

REQUEST = JobRequest.model_validate({"name": "train", "image": "nvidia/cuda:12.4.1-base", "command": ["true"]})
AT = "2026-11-22T12:00:00.000Z"
CAPACITY = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Service cannot fulfill the capacity requested"
FALLING_BACK = "falling back from g4dn.xlarge spot (INSUFFICIENT_CAPACITY) to g4dn.xlarge on-demand in pool od-pool"


def attempt(**fields: Any) -> AttemptRecord:
    return AttemptRecord.model_validate(
        {"instance_type": "g4dn.xlarge", "gpu_model": "T4", "capacity": CapacityType.ON_DEMAND, "job_queue": "od-pool",
         "batch_job_id": "b-1"} | fields
    )  # fmt: skip


def job(status: JobStatus, on: int, attempts: dict[int, AttemptRecord], **fields: Any) -> JobRecord:
    """A job whose status was last moved on by attempt `on`."""
    steps = [TimelineEntry(status=JobStatus.SUBMITTED, at=AT), TimelineEntry(status=status, at=AT)]
    return JobRecord.model_validate(
        {"job_id": "j1", "name": "train", "status": status, "status_rank": status_rank(status, on), "request": REQUEST,
         "attempts": attempts, "timeline": steps, "instance_type": "g4dn.xlarge", "gpu_model": "T4", "created_at": AT,
         "updated_at": AT} | fields
    )  # fmt: skip


def spot_attempt_left() -> AttemptRecord:
    """Attempt 1, spot, diagnosed and fallen back from, its Batch job terminated."""
    diagnosis = {"category": DiagnosisCategory.INSUFFICIENT_CAPACITY, "reason": CAPACITY, "recommendation": "-"}
    outcome = DiagnosisOutcome.model_validate(diagnosis | {"remedy": Remedy.FALL_BACK, "next_index": 1, "checks": 0})
    return attempt(capacity=CapacityType.SPOT, job_queue="spot-pool", batch_status=BatchStatus.FAILED,
                   status=AttemptStatus.FAILED, diagnosis=diagnosis, fell_back=outcome)  # fmt: skip


def test_while_the_next_attempt_s_pool_is_provisioned_the_view_is_on_that_attempt_not_the_one_it_left() -> None:
    # Given a spot attempt fallen back from, and the job PROVISIONING its on-demand attempt 2 (no entry yet), its start
    # wait on attempt 1 still parked
    wait = Wait(attempt=1, token="t", since=AT, timeout_seconds=900,
                next_candidate=NextCandidate(instance_type="g4dn.xlarge", capacity=CapacityType.ON_DEMAND))  # fmt: skip
    record = job(JobStatus.PROVISIONING, 2, {1: spot_attempt_left()}, capacity_type=BilledCapacity.ON_DEMAND,
                 waits={WaitPhase.START: wait})  # fmt: skip
    record.timeline[-1].reason = FALLING_BACK

    # When it is viewed
    view = job_view(record)

    # Then the view is on attempt 2, on-demand, waiting for what its provisioning said, with nothing next of attempt 1
    assert (view.status, view.attempt, view.capacity_type) == (JobStatus.PROVISIONING, 2, BilledCapacity.ON_DEMAND)
    assert view.reason == FALLING_BACK
    assert view.next_action is None
    assert [a.capacity_type for a in view.attempts] == [BilledCapacity.SPOT]


def test_a_job_on_a_submitted_attempt_is_billed_as_that_attempt_is() -> None:
    view = job_view(job(JobStatus.RUNNING, 2, {1: spot_attempt_left(), 2: attempt(batch_status=BatchStatus.RUNNING)}))
    assert (view.attempt, view.capacity_type) == (2, BilledCapacity.ON_DEMAND)


PRICED = Cost(usd=0.0438, hourly_usd=0.526, runtime_seconds=300, gpu_share=1, pricing="on-demand us-east-1")


def test_a_job_whose_attempt_batch_says_succeeded_reads_succeeded_with_the_entry_the_workflow_records() -> None:
    # Given a RUNNING job whose attempt Batch says SUCCEEDED, priced (RecordCost has yet to record the job's outcome)
    ended = attempt(batch_status=BatchStatus.SUCCEEDED, status=AttemptStatus.SUCCEEDED, exit_code=0,
                    stopped_at="2026-11-22T12:05:00.000Z", cost=PRICED)  # fmt: skip
    record = job(JobStatus.RUNNING, 1, {1: ended})

    # When it is viewed
    view = job_view(record)

    # Then it reads SUCCEEDED, its timeline ending as RecordCost will end it: when it stopped, how it exited
    assert view.status == JobStatus.SUCCEEDED
    assert view.timeline[-1] == TimelineEntry(status=JobStatus.SUCCEEDED, at=ended.stopped_at, reason="exited with 0")
    assert view.reason is None and view.next_action is None
    assert view.cost is not None and view.cost.usd == PRICED.usd


def test_an_attempt_that_ended_shows_its_outcome_only_with_its_cost() -> None:
    # Given a RUNNING job whose attempt Batch says SUCCEEDED, which job_events has yet to price
    ended = attempt(batch_status=BatchStatus.SUCCEEDED, status=AttemptStatus.SUCCEEDED, exit_code=0)
    # When / Then it stays RUNNING until then: a job that reads SUCCEEDED has its cost
    assert shown_status(job(JobStatus.RUNNING, 1, {1: ended})) == JobStatus.RUNNING
    assert shown_status(job(JobStatus.RUNNING, 1, {1: ended.model_copy(update={"cost": PRICED})})) == (
        JobStatus.SUCCEEDED
    )


def test_a_job_whose_attempt_failed_reads_failed_with_the_error_the_workflow_records() -> None:
    exited = {"exit_code": 1, "status_reason": "Essential container in task exited"}
    ended = attempt(
        batch_status=BatchStatus.FAILED,
        status=AttemptStatus.FAILED,
        stopped_at="2026-11-22T12:05:00.000Z",
        cost=PRICED,
        **exited,
    )
    view = job_view(job(JobStatus.RUNNING, 1, {1: ended}))
    expected = "attempt 1 (g4dn.xlarge on-demand) exited with 1: Essential container in task exited"
    assert (view.status, view.error, view.timeline[-1].reason) == (JobStatus.FAILED, expected, expected)


@pytest.mark.parametrize(
    "left",
    [
        spot_attempt_left(),
        attempt(
            capacity=CapacityType.SPOT,
            batch_status=BatchStatus.FAILED,
            status=AttemptStatus.FAILED,
            host_terminated=True,
        ),
        attempt(status=AttemptStatus.NOT_SUBMITTED, batch_job_id=None),
    ],
    ids=["fallen back from", "spot reclaimed", "pool could not take it"],
)
def test_a_job_leaving_an_attempt_that_ended_is_selecting_what_runs_next(left: AttemptRecord) -> None:
    assert job_view(job(JobStatus.RUNNABLE, 1, {1: left})).status == JobStatus.SELECTING


def test_a_job_is_never_behind_the_batch_status_its_attempt_recorded() -> None:
    # Given job_events recorded STARTING on the attempt and has yet to move the job from RUNNABLE
    record = job(JobStatus.RUNNABLE, 1, {1: attempt(batch_status=BatchStatus.STARTING, status=AttemptStatus.STARTING)})
    # When / Then
    assert shown_status(record) == JobStatus.STARTING


def test_a_finished_job_keeps_its_outcome_whatever_its_attempt_says() -> None:
    record = job(JobStatus.CANCELLED, 1, {1: attempt(batch_status=BatchStatus.RUNNING, status=AttemptStatus.RUNNING)})
    assert shown_status(record) == JobStatus.CANCELLED


def test_each_batch_retry_says_when_gpu_pilot_quarantined_the_host_it_ran_on() -> None:
    # Given an attempt Batch ran again after a bad host failed it, that host quarantined since (a timeline note), and a
    # retry on a host that was not
    retries = [BatchRetry(batch_attempt=1, host="i-0bad", reason="Task failed to start"),
               BatchRetry(batch_attempt=2, host="i-0other", reason="Task failed to start")]  # fmt: skip
    record = job(JobStatus.RUNNING, 1, {1: attempt(batch_status=BatchStatus.RUNNING, batch_retries=retries)})
    note = TimelineEntry(status=JobStatus.RUNNING, at="2026-11-22T12:01:00.000Z", reason="host i-0bad quarantined: x")
    record.timeline.append(note)

    # When it is viewed
    [viewed] = job_view(record).attempts

    # Then the first retry says when its host was quarantined, the second says none
    assert [r.quarantined_at for r in viewed.batch_retries] == [note.at, None]
