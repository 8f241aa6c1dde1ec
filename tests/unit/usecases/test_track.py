"""Waiting without polling: a parked token is sent by whichever side (wait or event) comes second."""

from __future__ import annotations

import json

import pytest

from functions.shared.domain.batch import BatchJobEvent, BatchJobState
from functions.shared.domain.records import Wait
from functions.shared.domain.steps import WaitInput
from functions.shared.domain.vocabulary import BatchStatus, JobStatus, WaitPhase
from functions.shared.usecases.track import park_wait, record_batch_event
from tests.unit.usecases.conftest import JOB_ID, submitted

AT = "2026-11-22T10:00:00.000Z"


def event(ports, status: str, attempt: int = 1, **fields) -> BatchJobEvent:
    batch_job_id = ports.jobs.get_job(JOB_ID).attempts[attempt].batch_job_id
    detail = {"jobId": batch_job_id, "jobName": f"gpupilot-{JOB_ID}-a{attempt}", "status": status} | fields
    return BatchJobEvent(at=AT, job=BatchJobState.from_batch(detail))


def park(ports, phase: WaitPhase, token: str, attempt: int = 1) -> list[WaitPhase]:
    batch_job_id = ports.jobs.get_job(JOB_ID).attempts[attempt].batch_job_id
    return park_wait(
        WaitInput(job_id=JOB_ID, phase=phase, attempt=attempt, batch_job_id=batch_job_id, task_token=token), ports
    )


def test_an_event_after_the_wait_parked_resumes_it(ports):
    # Given the start wait parked first
    submitted(ports)
    assert park(ports, WaitPhase.START, "tok-start") == []

    # When Batch says RUNNING
    result = record_batch_event(event(ports, "RUNNING", startedAt=1_800_000_000_000), ports)

    # Then the token is sent with the attempt's status, spent, and the job is RUNNING
    assert result["resumed"] == [WaitPhase.START]
    ((token, output),) = ports.workflow.sent
    assert token == "tok-start"
    assert json.loads(output)["status"] == "RUNNING"
    record = ports.jobs.get_job(JOB_ID)
    assert record.status == JobStatus.RUNNING
    assert record.waits == {}


def test_a_wait_that_parks_after_the_event_resumes_at_once(ports):
    # Given Batch already said RUNNING before the wait parked
    submitted(ports)
    record_batch_event(event(ports, "RUNNING"), ports)

    # When the start wait parks
    resumed = park(ports, WaitPhase.START, "tok-start")

    # Then it resumes itself
    assert resumed == [WaitPhase.START]


def test_running_releases_the_start_wait_but_not_the_finish_wait(ports):
    # Given both waits parked on attempt 1
    submitted(ports)
    park(ports, WaitPhase.START, "tok-start")
    park(ports, WaitPhase.FINISH, "tok-finish")

    # When it runs
    record_batch_event(event(ports, "RUNNING"), ports)

    # Then only the start wait resumed; the finish wait stays parked
    assert [token for token, _ in ports.workflow.sent] == ["tok-start"]
    assert set(ports.jobs.get_job(JOB_ID).waits) == {WaitPhase.FINISH}


def test_a_wait_is_judged_by_its_own_attempt(ports):
    # Given the finish wait parked on attempt 1, and an event of an attempt the record has no wait on
    submitted(ports)
    park(ports, WaitPhase.FINISH, "tok-finish")

    # When attempt 1 only becomes RUNNABLE
    record_batch_event(event(ports, "RUNNABLE"), ports)

    # Then nothing is released
    assert ports.workflow.sent == []


def test_a_spent_token_is_forgotten_without_error(ports):
    # Given a parked token that Step Functions already considers spent (resumed by the other side)
    submitted(ports)
    park(ports, WaitPhase.START, "tok-start")
    ports.workflow.spent.add("tok-start")

    # When the event comes
    result = record_batch_event(event(ports, "STARTING"), ports)

    # Then nothing is resumed, and the token is cleared
    assert result["resumed"] == []
    assert ports.jobs.get_job(JOB_ID).waits == {}


def test_a_stale_event_changes_nothing_but_still_resumes_a_satisfied_wait(ports):
    # Given the attempt RUNNING and a wait whose SendTaskSuccess was lost
    submitted(ports)
    record_batch_event(event(ports, "RUNNING"), ports)
    ports.jobs.store_wait(JOB_ID, WaitPhase.START, Wait(attempt=1, token="tok-lost"))

    # When a late RUNNABLE event arrives (out of order)
    result = record_batch_event(event(ports, "RUNNABLE"), ports)

    # Then the attempt stays RUNNING and the lost resume is redone
    assert result["ignored"] == "stale or duplicate event"
    assert result["resumed"] == [WaitPhase.START]
    assert ports.jobs.get_job(JOB_ID).attempts[1].batch_status == BatchStatus.RUNNING


def test_events_of_jobs_gpupilot_did_not_submit_are_ignored(ports):
    # Given / When
    foreign = BatchJobEvent(at=AT, job=BatchJobState(job_id="x", job_name="someone-elses-job", status="FAILED"))

    # Then
    assert record_batch_event(foreign, ports) == {"ignored": "not a GPU Pilot job"}


def test_events_of_another_deployment_are_ignored(ports):
    # Given a job name of our shape whose job this store does not know
    other = BatchJobEvent(
        at=AT, job=BatchJobState(job_id="x", job_name="gpupilot-ffffffffffffffff-a1", status="RUNNING")
    )

    # When / Then
    assert record_batch_event(other, ports)["ignored"] == "not a job of this deployment"


def test_a_malformed_eventbridge_event_is_not_a_batch_event():
    # Given / When / Then
    assert BatchJobEvent.from_eventbridge({"detail-type": "Batch Job State Change", "detail": {}}) is None
    assert BatchJobEvent.from_eventbridge({"detail-type": "Batch Job Queue Blocked", "detail": {}}) is None
    assert BatchJobEvent.from_eventbridge({"detail-type": "Batch Job State Change", "detail": "x"}) is None


def test_a_redelivered_event_resumes_a_workflow_whose_first_resume_failed(ports):
    # Given a parked finish wait, and SendTaskSuccess failing (throttled) when the event first arrives
    submitted(ports)
    park(ports, WaitPhase.FINISH, "tok-finish")
    real_send = ports.workflow.send_task_success

    def throttled(token: str, output: str) -> bool:
        raise RuntimeError("ThrottlingException")

    ports.workflow.send_task_success = throttled  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        record_batch_event(event(ports, "SUCCEEDED"), ports)
    ports.workflow.send_task_success = real_send  # type: ignore[method-assign]

    # When EventBridge delivers the same event again
    again = record_batch_event(event(ports, "SUCCEEDED"), ports)

    # Then the duplicate is not recorded twice but the workflow is resumed, and the spent token forgotten
    assert again["ignored"] == "stale or duplicate event"
    assert again["resumed"] == [WaitPhase.FINISH]
    assert [token for token, _ in ports.workflow.sent] == ["tok-finish"]
    assert ports.jobs.get_job(JOB_ID).waits == {}


CAPACITY = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Service cannot fulfill the capacity requested"


def test_batchs_reason_on_the_first_runnable_event_explains_the_runnable_entry(ports):
    # Given an attempt submitted (SubmitBatchJob moved the job to RUNNABLE before any event)
    submitted(ports)

    # When Batch's first RUNNABLE event already says why
    record_batch_event(event(ports, "RUNNABLE", statusReason=CAPACITY), ports)

    # Then that RUNNABLE entry carries Batch's words, once
    timeline = ports.jobs.get_job(JOB_ID).timeline
    assert [e.reason for e in timeline if e.status == JobStatus.RUNNABLE] == [CAPACITY]


def test_a_queue_blocked_event_gives_the_runnable_entry_batchs_reason(ports):
    # Given an attempt Batch already reported RUNNABLE without a reason
    submitted(ports)
    record_batch_event(event(ports, "RUNNABLE"), ports)
    batch_job_id = ports.jobs.get_job(JOB_ID).attempts[1].batch_job_id

    # When AWS Batch sends its queue-blocked event (the job's state does not change)
    blocked = BatchJobEvent.from_eventbridge(
        {"detail-type": "Batch Job Queue Blocked", "time": "2026-11-22T10:05:00Z",
         "detail": {"jobId": batch_job_id, "jobName": f"gpupilot-{JOB_ID}-a1", "status": "RUNNABLE",
                    "statusReason": CAPACITY}}
    )  # fmt: skip
    assert blocked is not None
    record_batch_event(blocked, ports)

    # Then the attempt and the job's RUNNABLE entry say why
    record = ports.jobs.get_job(JOB_ID)
    assert record.attempts[1].status_reason == CAPACITY
    assert (record.timeline[-1].status, record.timeline[-1].reason) == (JobStatus.RUNNABLE, CAPACITY)


def test_a_late_reason_of_an_earlier_attempt_does_not_explain_the_next_attempts_wait(ports):
    # Given attempt 1 RUNNABLE, and the job since fallen back to attempt 2, RUNNABLE too
    submitted(ports)
    record_batch_event(event(ports, "RUNNABLE"), ports)
    ports.jobs.put_attempt(JOB_ID, 2, ports.jobs.get_job(JOB_ID).attempts[1].model_copy(update={"batch_status": None}))
    ports.jobs.advance(JOB_ID, JobStatus.PROVISIONING, attempt=2, reason="falling back")
    ports.jobs.advance(JOB_ID, JobStatus.RUNNABLE, attempt=2)

    # When Batch's reason for attempt 1 arrives late
    record_batch_event(event(ports, "RUNNABLE", statusReason=CAPACITY), ports)

    # Then attempt 1 notes it, and attempt 2's RUNNABLE entry is not explained by attempt 1's words
    record = ports.jobs.get_job(JOB_ID)
    assert record.attempts[1].status_reason == CAPACITY
    assert (record.timeline[-1].status, record.timeline[-1].reason) == (JobStatus.RUNNABLE, None)


def test_pricing_the_end_an_event_records_reads_no_record_again(ports, monkeypatch):
    # Given a running attempt, and Batch's event of its end
    submitted(ports)
    record_batch_event(event(ports, "RUNNING", startedAt=1_800_000_000_000), ports)
    ended = event(ports, "SUCCEEDED", startedAt=1_800_000_000_000, stoppedAt=1_800_000_360_000)
    reads: list[str] = []
    read = ports.jobs.get_job
    monkeypatch.setattr(ports.jobs, "get_job", lambda job_id: reads.append(job_id) or read(job_id))

    # When the end is recorded
    record_batch_event(ended, ports)

    # Then the attempt is priced from the record its write returned: nothing read it again
    assert reads == []
    assert read(JOB_ID).attempts[1].cost is not None
