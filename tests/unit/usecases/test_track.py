"""Waiting without polling: a parked token is sent by whichever side (wait or event) comes second."""

from __future__ import annotations

import json

import pytest

from functions.shared.domain.core.vocabulary import BatchStatus, JobStatus, WaitPhase
from functions.shared.domain.fleet.batch import BatchJobEvent, BatchJobState, ContainerInstanceState
from functions.shared.domain.jobs.records import Wait
from functions.shared.domain.jobs.steps import Selection, WaitInput
from functions.shared.usecases.jobs.track import park_wait, record_batch_event
from tests.unit.usecases.conftest import JOB_ID, submitted

AT = "2026-11-22T10:00:00.000Z"


def event(ports, status: str, attempt: int = 1, **fields) -> BatchJobEvent:
    batch_job_id = ports.jobs.get_job(JOB_ID).attempts[attempt].batch_job_id
    detail = {"jobId": batch_job_id, "jobName": f"gpupilot-{JOB_ID}-a{attempt}", "status": status} | fields
    return BatchJobEvent(at=AT, job=BatchJobState.from_batch(detail))


def park(ports, phase: WaitPhase, token: str, attempt: int = 1, selection: Selection | None = None) -> list[WaitPhase]:
    batch_job_id = ports.jobs.get_job(JOB_ID).attempts[attempt].batch_job_id
    waiting = WaitInput(job_id=JOB_ID, phase=phase, attempt=attempt, batch_job_id=batch_job_id, task_token=token,
                        selection=selection)  # fmt: skip
    return park_wait(waiting, ports)


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


# -- Batch's verdict resumes the start wait at once -------------------------------------------------------------
def queue_blocked(ports, reason: str, at: str = "2026-11-22T10:05:00Z") -> BatchJobEvent:
    batch_job_id = ports.jobs.get_job(JOB_ID).attempts[1].batch_job_id
    blocked = BatchJobEvent.from_eventbridge(
        {"detail-type": "Batch Job Queue Blocked", "time": at,
         "detail": {"jobId": batch_job_id, "jobName": f"gpupilot-{JOB_ID}-a1", "status": "RUNNABLE",
                    "statusReason": reason}}
    )  # fmt: skip
    assert blocked is not None
    return blocked


def test_a_capacity_verdict_resumes_the_parked_start_wait_at_once_saying_so(ports):
    # Given the start wait parked on an attempt Batch reported RUNNABLE without a reason
    step = submitted(ports)
    record_batch_event(event(ports, "RUNNABLE"), ports)
    park(ports, WaitPhase.START, "tok-start", selection=step.selection)

    # When Batch's queue-blocked event says it lacks capacity
    result = record_batch_event(queue_blocked(ports, CAPACITY), ports)

    # Then the wait resumes now, its output naming the verdict (the workflow diagnoses rather than waits)
    assert result["resumed"] == [WaitPhase.START]
    ((token, output),) = ports.workflow.sent
    assert token == "tok-start"
    sent = json.loads(output)
    assert (sent["status"], sent["verdict"]) == ("RUNNABLE", "INSUFFICIENT_CAPACITY")
    record = ports.jobs.get_job(JOB_ID)
    assert record.waits == {} and record.attempts[1].verdict == CAPACITY


def test_a_start_wait_that_parks_after_the_verdict_resumes_at_once(ports):
    # Given Batch already said why the job cannot start
    step = submitted(ports)
    record_batch_event(event(ports, "RUNNABLE", statusReason=CAPACITY), ports)

    # When the start wait parks
    resumed = park(ports, WaitPhase.START, "tok-start", selection=step.selection)

    # Then it resumes itself with the verdict
    assert resumed == [WaitPhase.START]
    assert json.loads(ports.workflow.sent[0][1])["verdict"] == "INSUFFICIENT_CAPACITY"


def test_a_start_wait_parked_while_the_verdict_is_written_is_resumed_by_the_event(ports, monkeypatch):
    # Given a RUNNABLE attempt whose start wait parks after job_events read the record but before its write of
    # Batch's reason lands (the wait Lambda reads a record without the reason; job_events read one without the wait)
    step = submitted(ports)
    record_batch_event(event(ports, "RUNNABLE"), ports)
    parked: list[list[WaitPhase]] = []
    note_reason = ports.jobs.note_reason

    def wait_parks_first(*args, **kwargs):
        parked.append(park(ports, WaitPhase.START, "tok-start", selection=step.selection))
        return note_reason(*args, **kwargs)

    monkeypatch.setattr(ports.jobs, "note_reason", wait_parks_first)

    # When the queue-blocked event's capacity verdict is recorded
    result = record_batch_event(queue_blocked(ports, CAPACITY), ports)

    # Then the event resumes the wait from the record its own write returned: the verdict is acted on now
    assert parked == [[]]
    assert result["resumed"] == [WaitPhase.START]
    assert [json.loads(output)["verdict"] for _, output in ports.workflow.sent] == ["INSUFFICIENT_CAPACITY"]
    assert ports.jobs.get_job(JOB_ID).waits == {}


def test_a_verdict_resumes_the_start_wait_once(ports):
    # Given a verdict that already resumed the start wait (the workflow diagnosed it and waits again)
    step = submitted(ports)
    record_batch_event(event(ports, "RUNNABLE", statusReason=CAPACITY), ports)
    park(ports, WaitPhase.START, "tok-first", selection=step.selection)

    # When the workflow parks again, and Batch repeats its verdict
    again = park(ports, WaitPhase.START, "tok-second", selection=step.selection)
    repeated = record_batch_event(queue_blocked(ports, CAPACITY), ports)

    # Then the same words do not resume it again: its timeout is left to act
    assert again == [] and repeated.get("resumed", []) == []
    assert [token for token, _ in ports.workflow.sent] == ["tok-first"]
    assert set(ports.jobs.get_job(JOB_ID).waits) == {WaitPhase.START}


@pytest.mark.parametrize(
    "reason",
    [
        "MISCONFIGURATION:COMPUTE_ENVIRONMENT_MAX_RESOURCE - CE(s) associated with the job queue cannot meet the CPU",
        "UNDETERMINED - Batch job is blocked, root cause is undetermined.",
        "MISCONFIGURATION:SERVICE_ROLE_PERMISSIONS - Batch service role has a permission issue.",
    ],
)
def test_a_reason_another_gpu_type_does_not_cure_leaves_the_start_wait_to_its_timeout(ports, reason):
    # Given a parked start wait
    step = submitted(ports)
    record_batch_event(event(ports, "RUNNABLE"), ports)
    park(ports, WaitPhase.START, "tok-start", selection=step.selection)

    # When Batch blocks the queue for a reason time (or an operator) may cure
    record_batch_event(queue_blocked(ports, reason), ports)

    # Then the reason is recorded, and the wait keeps waiting
    assert ports.workflow.sent == []
    assert ports.jobs.get_job(JOB_ID).attempts[1].status_reason == reason


def test_a_verdict_on_a_job_with_no_candidate_left_leaves_the_start_wait_to_its_stuck_after(ports):
    # Given a job that accepts one GPU type only, its start wait parked
    step = submitted(ports, instance_types=["g4dn.xlarge"])
    assert len(step.selection.candidates) == 1
    record_batch_event(event(ports, "RUNNABLE"), ports)
    park(ports, WaitPhase.START, "tok-start", selection=step.selection)

    # When Batch says it lacks capacity
    record_batch_event(queue_blocked(ports, CAPACITY), ports)

    # Then there is nowhere to fall back to: the wait keeps the time the request gave it (capacity may come back)
    assert ports.workflow.sent == []
    assert set(ports.jobs.get_job(JOB_ID).waits) == {WaitPhase.START}


def test_the_runnable_entry_keeps_when_batch_gave_its_reason(ports):
    # Given an attempt RUNNABLE since 10:00:00 without a reason
    submitted(ports)
    record_batch_event(event(ports, "RUNNABLE"), ports)

    # When Batch's queue-blocked event of 10:05 says why
    record_batch_event(queue_blocked(ports, CAPACITY, at="2026-11-22T10:05:00Z"), ports)

    # Then the RUNNABLE entry says when the reason was learnt (Batch's verdict moment)
    entry = ports.jobs.get_job(JOB_ID).timeline[-1]
    assert (entry.status, entry.reason, entry.reason_at) == (JobStatus.RUNNABLE, CAPACITY, "2026-11-22T10:05:00.000Z")


def test_the_parked_start_wait_knows_until_when_it_waits_and_what_comes_next(ports):
    # Given a job with candidates after its first
    step = submitted(ports)

    # When the start wait parks with its timeout and the selection
    park_wait(
        WaitInput(job_id=JOB_ID, phase=WaitPhase.START, attempt=1, task_token="tok", timeout_seconds=900,
                  selection=step.selection, batch_job_id=ports.jobs.get_job(JOB_ID).attempts[1].batch_job_id or ""),
        ports,
    )  # fmt: skip

    # Then the record holds when it parked, for how long, and the next candidate
    wait = ports.jobs.get_job(JOB_ID).waits[WaitPhase.START]
    following = step.selection.candidates[1]
    assert wait.since is not None and wait.timeout_seconds == 900
    assert wait.next_candidate is not None
    assert (wait.next_candidate.instance_type, wait.next_candidate.capacity) == (
        following.instance_type,
        following.capacity,
    )


def test_the_log_stream_batch_names_at_running_is_recorded_on_the_attempt(ports):
    # Given a submitted attempt
    submitted(ports)

    # When Batch says RUNNING and names the attempt's log stream
    stream = "gpupilot/default/0123abcd"
    record_batch_event(event(ports, "RUNNING", container={"logStreamName": stream}), ports)

    # Then the attempt carries the stream, and a later event without one keeps it
    record_batch_event(event(ports, "SUCCEEDED", container={"exitCode": 0}), ports)
    assert ports.jobs.get_job(JOB_ID).attempts[1].log_stream == stream


# -- Batch's retries of an attempt ----------------------------------------------------------------------------
BAD_HOST = "arn:aws:ecs:us-east-1:123456789012:container-instance/gpupilot-pool_Batch_1/0bad"
GOOD_HOST = "arn:aws:ecs:us-east-1:123456789012:container-instance/gpupilot-pool_Batch_1/0good"
HOOK = "CannotStartContainerError: OCI runtime create failed: error running hook #0: nvml error: driver not loaded"


def batch_attempt(host: str, started: int, stopped: int | None = None, **fields) -> dict:
    ran = {"container": {"containerInstanceArn": host, **fields.pop("container", {})}, "startedAt": started}
    return ran | ({"stoppedAt": stopped} if stopped else {}) | fields


def hosts(ports, *arns: str) -> None:
    """ECS knows each container instance, on EC2 instance i-<its id>."""
    ports.fleet.by_cluster["cluster"] = [
        ContainerInstanceState(arn=arn, ec2_instance_id=f"i-{arn.rsplit('/', 1)[-1]}", status="ACTIVE") for arn in arns
    ]


def test_a_retry_batch_runs_after_a_bad_host_is_kept_with_its_host_and_why_though_the_status_goes_back(ports):
    # Given an attempt that Batch started on a bad host, and ECS knowing that host's EC2 instance
    submitted(ports)
    hosts(ports, BAD_HOST, GOOD_HOST)
    record_batch_event(event(ports, "STARTING", attempts=[batch_attempt(BAD_HOST, 1_800_000_000_000)]), ports)
    failed = batch_attempt(
        BAD_HOST, 1_800_000_000_000, 1_800_000_001_000, statusReason="Task failed to start", container={"reason": HOOK}
    )

    # When Batch puts the job back to RUNNABLE to run it again (a step back the attempt's status does not take)
    result = record_batch_event(event(ports, "RUNNABLE", attempts=[failed]), ports)

    # Then the attempt keeps the retry: Batch's attempt, the EC2 instance it ran on, and Batch's words
    assert result["ignored"] == "stale or duplicate event"
    attempt = ports.jobs.get_job(JOB_ID).attempts[1]
    assert attempt.batch_status == BatchStatus.STARTING
    [retry] = attempt.batch_retries
    assert (retry.batch_attempt, retry.host, retry.container_instance_arn) == (1, "i-0bad", BAD_HOST)
    assert retry.reason == f"Task failed to start; {HOOK}"


def test_the_end_of_a_retried_job_keeps_each_retry_once_and_not_its_own_end(ports):
    # Given an attempt whose first Batch attempt failed on a bad host, already kept as a retry
    submitted(ports)
    hosts(ports, BAD_HOST, GOOD_HOST)
    failed = batch_attempt(BAD_HOST, 1_800_000_000_000, 1_800_000_001_000, statusReason="Task failed to start")
    record_batch_event(event(ports, "RUNNABLE", attempts=[failed]), ports)
    ports.fleet.by_cluster.clear()  # ECS forgets the hosts: a retry kept already keeps the host it named

    # When Batch says it SUCCEEDED on the good host
    done = batch_attempt(GOOD_HOST, 1_800_000_002_000, 1_800_000_005_000, container={"exitCode": 0})
    record_batch_event(event(ports, "SUCCEEDED", attempts=[failed, done], container={"exitCode": 0}), ports)

    # Then the one retry is kept as it was, and the successful end is not a retry
    [retry] = ports.jobs.get_job(JOB_ID).attempts[1].batch_retries
    assert (retry.batch_attempt, retry.host) == (1, "i-0bad")


def test_a_spot_reclaim_s_retry_names_the_instance_batch_says_went_away(ports):
    # Given an attempt whose spot host EC2 took back (ECS no longer knows it)
    submitted(ports)
    gone = batch_attempt(
        BAD_HOST, 1_800_000_000_000, 1_800_000_001_000, statusReason="Host EC2 (instance i-0abc123) terminated."
    )

    # When Batch runs it again
    record_batch_event(event(ports, "RUNNABLE", attempts=[gone]), ports)

    # Then the retry names the instance from Batch's own words
    [retry] = ports.jobs.get_job(JOB_ID).attempts[1].batch_retries
    assert (retry.host, retry.reason) == ("i-0abc123", "Host EC2 (instance i-0abc123) terminated.")


def test_a_retry_s_host_is_looked_up_once_whatever_events_repeat_it(ports, monkeypatch):
    # Given an attempt whose first Batch attempt failed on a bad host, and ECS's lookups counted
    submitted(ports)
    hosts(ports, BAD_HOST, GOOD_HOST)
    looked_up: list[str] = []
    lookup = ports.fleet.container_instance
    monkeypatch.setattr(ports.fleet, "container_instance", lambda arn: looked_up.append(arn) or lookup(arn))
    failed = batch_attempt(BAD_HOST, 1_800_000_000_000, 1_800_000_001_000, statusReason="Task failed to start")
    done = batch_attempt(GOOD_HOST, 1_800_000_002_000, 1_800_000_005_000, container={"exitCode": 0})

    # When Batch's events repeat that retry (RUNNABLE twice, as EventBridge may redeliver, then SUCCEEDED)
    for status, attempts in (("RUNNABLE", [failed]), ("RUNNABLE", [failed]), ("SUCCEEDED", [failed, done])):
        record_batch_event(event(ports, status, attempts=attempts, container={"exitCode": 0}), ports)

    # Then ECS was asked about the bad host once: only a new retry costs a DescribeContainerInstances
    assert looked_up.count(BAD_HOST) == 1, looked_up
    assert len(ports.jobs.get_job(JOB_ID).attempts[1].batch_retries) == 1
