"""DiagnoseStuckJob: explain the wait, fall back when another GPU type can cure it, never twice."""

from __future__ import annotations

from functions.shared.domain.core.vocabulary import (
    BatchStatus,
    CapacityType,
    DiagnosisCategory,
    JobStatus,
    MetricName,
    Remedy,
    WaitPhase,
)
from functions.shared.domain.fleet.batch import BatchJobEvent, ContainerInstanceState
from functions.shared.domain.jobs.records import Wait
from functions.shared.domain.jobs.steps import DiagnoseInput, SubmittedJob
from functions.shared.usecases.diagnosis.diagnose import diagnose_stuck_job
from functions.shared.usecases.jobs.track import record_batch_event
from tests.unit.usecases.conftest import JOB_ID, submitted

CAPACITY = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Service cannot fulfill the capacity requested"


def diagnose_input(ports, step, checks: int = 0) -> DiagnoseInput:
    attempt = ports.jobs.get_job(JOB_ID).attempts[1]
    batch_job = SubmittedJob(
        batch_job_id=attempt.batch_job_id,
        job_queue=attempt.job_queue,
        job_definition=attempt.job_definition or "",
        attempt=1,
        instance_type=attempt.instance_type,
        capacity=attempt.capacity,
    )
    return DiagnoseInput(
        job_id=JOB_ID,
        request=step.request,
        selection=step.selection,
        queue=step.queue,
        batch_job=batch_job,
        previous={"checks": checks},
    )


def test_a_capacity_shortage_falls_back_cancels_the_attempt_and_remembers_the_offering(ports):
    # Given a submitted attempt that Batch keeps RUNNABLE for lack of capacity
    step = submitted(ports)
    (batch_job_id,) = ports.batch.jobs
    ports.batch.set_status(batch_job_id, "RUNNABLE", statusReason=CAPACITY)

    # When diagnosing it
    outcome = diagnose_stuck_job(diagnose_input(ports, step), ports)

    # Then: fall back to the next candidate with Batch's words, the attempt cancelled, the offering remembered
    assert (outcome.category, outcome.remedy, outcome.next_index) == (
        DiagnosisCategory.INSUFFICIENT_CAPACITY,
        Remedy.FALL_BACK,
        1,
    )
    assert outcome.evidence["status_reason"] == CAPACITY
    assert ports.batch.terminated == [(batch_job_id, "GPU Pilot fell back: INSUFFICIENT_CAPACITY")]
    candidate = step.selection.current()
    assert {f"on-demand:us-east-1:{candidate.instance_type}:{z}" for z in candidate.zones} <= set(
        ports.offerings.unavailable_offerings()
    )
    assert ports.jobs.get_job(JOB_ID).attempts[1].diagnosis.category == DiagnosisCategory.INSUFFICIENT_CAPACITY
    assert ports.metrics.total(MetricName.STUCK_JOB_DIAGNOSES) == 1


def test_a_retried_diagnosis_repeats_its_answer_without_cancelling_again(ports):
    # Given a diagnosis that already fell back
    step = submitted(ports)
    (batch_job_id,) = ports.batch.jobs
    ports.batch.set_status(batch_job_id, "RUNNABLE", statusReason=CAPACITY)
    first = diagnose_stuck_job(diagnose_input(ports, step), ports)

    # When Step Functions retries DiagnoseStuckJob
    second = diagnose_stuck_job(diagnose_input(ports, step), ports)

    # Then the same answer, one termination
    assert second == first
    assert len(ports.batch.terminated) == 1


def test_a_job_that_started_as_the_wait_timed_out_is_waited_for_again(ports):
    # Given the start wait parked, and the job RUNNING although its event has not arrived
    step = submitted(ports)
    (batch_job_id,) = ports.batch.jobs
    ports.jobs.store_wait(JOB_ID, WaitPhase.START, Wait(attempt=1, token="tok-start"))
    ports.batch.set_status(batch_job_id, "RUNNING", startedAt=1_800_000_000_000)

    # When the diagnosis runs
    outcome = diagnose_stuck_job(diagnose_input(ports, step, checks=1), ports)

    # Then it keeps waiting without spending a check, records the status, and nothing is cancelled
    assert (outcome.remedy, outcome.checks) == (Remedy.KEEP_WAITING, 1)
    assert ports.jobs.get_job(JOB_ID).attempts[1].batch_status == BatchStatus.RUNNING
    assert ports.batch.terminated == []


def test_a_young_job_without_a_reason_keeps_waiting_and_spends_a_check(ports):
    # Given a just-submitted job Batch gives no reason for
    step = submitted(ports)
    (batch_job_id,) = ports.batch.jobs
    ports.batch.set_status(batch_job_id, "RUNNABLE")

    # When diagnosing it
    outcome = diagnose_stuck_job(diagnose_input(ports, step, checks=1), ports)

    # Then
    assert (outcome.category, outcome.remedy, outcome.checks) == (
        DiagnosisCategory.WAITING_FOR_SCALE_UP,
        Remedy.KEEP_WAITING,
        2,
    )


def test_a_stuck_job_in_an_invalid_pool_falls_back(ports):
    # Given the attempt's pool went INVALID after the job was submitted
    step = submitted(ports)
    ports.pools.create_compute_environment({"computeEnvironmentName": step.queue.compute_environment})
    ports.pools.make_invalid(step.queue.compute_environment, "CLIENT_ERROR - launch template gpupilot-gpu not found")

    # When diagnosing it
    outcome = diagnose_stuck_job(diagnose_input(ports, step), ports)

    # Then
    assert (outcome.category, outcome.remedy) == (DiagnosisCategory.COMPUTE_ENVIRONMENT_INVALID, Remedy.FALL_BACK)
    assert outcome.evidence["compute_environment_reason"] == "CLIENT_ERROR - launch template gpupilot-gpu not found"


def test_a_pool_that_launched_nothing_is_diagnosed_when_service_quotas_will_not_tell_its_quota(ports):
    import time

    from functions.shared.domain.core.errors import SignalUnavailable

    # Given an attempt RUNNABLE for 20 minutes in a VALID pool without instances, its quota refused to GPU Pilot
    step = submitted(ports)
    name = step.queue.compute_environment
    resources = {"type": "EC2", "maxvCpus": 256, "instanceTypes": [step.selection.current().instance_type]}
    ports.pools.create_compute_environment({"computeEnvironmentName": name, "computeResources": resources})
    ports.pools.make_valid(name)
    ports.quotas.refused["L-DB2E81BA"] = SignalUnavailable("GetServiceQuota", "AccessDeniedException")
    (batch_job_id,) = ports.batch.jobs
    ports.batch.set_status(batch_job_id, "RUNNABLE", createdAt=int((time.time() - 1200) * 1000))

    # When diagnosing it
    outcome = diagnose_stuck_job(diagnose_input(ports, step), ports)

    # Then the diagnosis stands, says why it could not tell the quota, and names the quota to check
    assert outcome.category == DiagnosisCategory.NO_INSTANCES_LAUNCHED
    assert outcome.evidence["quota_unavailable"] == "GetServiceQuota: AccessDeniedException"
    assert "quota L-DB2E81BA, Running On-Demand G and VT instances" in outcome.recommendation


def test_a_job_past_its_give_up_after_minutes_gives_up_however_curable_the_cause(ports):
    # Given a job that may wait 1 minute in all, created two minutes ago, stuck for lack of capacity
    step = submitted(ports, give_up_after_minutes=1)
    record = ports.jobs.records[JOB_ID]
    ports.jobs.records[JOB_ID] = record.model_copy(update={"created_at": "2020-01-01T00:00:00.000Z"})
    (batch_job_id,) = ports.batch.jobs
    ports.batch.set_status(batch_job_id, "RUNNABLE", statusReason=CAPACITY)

    # When diagnosing it
    outcome = diagnose_stuck_job(diagnose_input(ports, step), ports)

    # Then it does not fall back: it gives up, and says why
    assert (outcome.category, outcome.remedy) == (DiagnosisCategory.INSUFFICIENT_CAPACITY, Remedy.GIVE_UP)
    assert "give_up_after_minutes" in outcome.reason and outcome.evidence["give_up_after_minutes"] == 1


def test_a_diagnosis_explains_the_runnable_entry_when_batch_gives_no_reason(ports):
    # Given an attempt RUNNABLE that Batch gives no reason for
    step = submitted(ports)
    (batch_job_id,) = ports.batch.jobs
    ports.batch.set_status(batch_job_id, "RUNNABLE")

    # When diagnosing it
    outcome = diagnose_stuck_job(diagnose_input(ports, step, checks=1), ports)

    # Then the job's RUNNABLE entry says what the diagnosis found
    entry = ports.jobs.get_job(JOB_ID).timeline[-1]
    assert (entry.status, entry.reason) == (JobStatus.RUNNABLE, f"WAITING_FOR_SCALE_UP: {outcome.reason}")


def test_a_diagnosis_that_restates_batchs_verdict_keeps_batchs_words_and_their_time_on_the_runnable_entry(ports):
    # Given Batch's capacity verdict recorded on the RUNNABLE entry at 10:05
    step = submitted(ports)
    (batch_job_id,) = ports.batch.jobs
    state = ports.batch.set_status(batch_job_id, "RUNNABLE", statusReason=CAPACITY)
    record_batch_event(BatchJobEvent(at="2026-11-22T10:05:00.000Z", job=state), ports)

    # When the verdict is diagnosed
    diagnose_stuck_job(diagnose_input(ports, step), ports)

    # Then the entry still says what Batch said, and when (the moment the fallback started from)
    entry = ports.jobs.get_job(JOB_ID).timeline[-1]
    assert (entry.status, entry.reason, entry.reason_at) == (JobStatus.RUNNABLE, CAPACITY, "2026-11-22T10:05:00.000Z")


RECLAIMED = "Host EC2 (instance i-0abc) terminated."
CONTAINER_INSTANCE = "arn:aws:ecs:us-east-1:123456789012:container-instance/gpupilot-sp_Batch_1/ci-1"


def reclaimed(ports, zone: str = "us-east-1b") -> str:
    """The attempt's Batch job ended by EC2 reclaiming its spot host, as job_events recorded it."""
    (batch_job_id,) = ports.batch.jobs
    ports.fleet.by_cluster["cluster"] = [ContainerInstanceState(arn=CONTAINER_INSTANCE, zone=zone)]
    attempts = [{"statusReason": RECLAIMED, "startedAt": 1_800_000_000_000, "stoppedAt": 1_800_000_600_000,
                 "container": {"containerInstanceArn": CONTAINER_INSTANCE}}]  # fmt: skip
    state = ports.batch.set_status(batch_job_id, "FAILED", statusReason=RECLAIMED, attempts=attempts)
    record_batch_event(BatchJobEvent(at="2026-11-22T10:10:00.000Z", job=state), ports)
    return batch_job_id


def test_a_spot_attempt_whose_host_ec2_reclaimed_falls_back_and_remembers_the_spot_offering_where_it_ran(ports):
    # Given a spot-first job whose spot attempt ended because EC2 reclaimed its host (once, the default bound)
    step = submitted(ports, capacity="spot-first", instance_types=["g6.xlarge"])
    assert step.selection.current().capacity == CapacityType.SPOT
    reclaimed(ports, zone="us-east-1b")

    # When the reclaimed attempt is diagnosed
    outcome = diagnose_stuck_job(diagnose_input(ports, step), ports)

    # Then it falls back to the next candidate (on-demand) with Batch's words, cancelling nothing (it ended)
    following = step.selection.candidates[1]
    assert (outcome.category, outcome.remedy, outcome.next_index) == (
        DiagnosisCategory.INSUFFICIENT_CAPACITY,
        Remedy.FALL_BACK,
        1,
    )
    assert following.capacity == CapacityType.ON_DEMAND
    assert RECLAIMED in outcome.reason and outcome.evidence["host_terminations"] == [RECLAIMED]
    assert f"moves on to {following.instance_type} (on-demand)" in outcome.recommendation
    assert ports.batch.terminated == []
    # And the spot offering is remembered where it ran, with the reclaim as its cause
    remembered = ports.offerings.unavailable_offerings()
    key = "spot:us-east-1:g6.xlarge:us-east-1b"
    assert set(remembered) == {key}
    assert remembered[key].cause.startswith("EC2 reclaimed spot instances 1 time, the last")


def test_a_reclaimed_spot_attempt_with_no_candidate_left_gives_up(ports):
    # Given a spot-only job with one candidate, reclaimed
    step = submitted(ports, capacity="spot", instance_types=["g6.xlarge"])
    assert len(step.selection.candidates) == 1
    reclaimed(ports)

    # When / Then
    outcome = diagnose_stuck_job(diagnose_input(ports, step), ports)
    assert (outcome.category, outcome.remedy) == (DiagnosisCategory.INSUFFICIENT_CAPACITY, Remedy.GIVE_UP)
    assert "No candidate is left" in outcome.recommendation
