"""DiagnoseStuckJob: explain the wait, fall back when another GPU type can cure it, never twice."""

from __future__ import annotations

from functions.shared.domain.records import Wait
from functions.shared.domain.steps import DiagnoseInput, SubmittedJob
from functions.shared.domain.vocabulary import BatchStatus, DiagnosisCategory, JobStatus, MetricName, Remedy, WaitPhase
from functions.shared.usecases.diagnose import diagnose_stuck_job
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
    assert {
        f"on-demand:{candidate.instance_type}:{z}" for z in candidate.zones
    } <= ports.offerings.unavailable_offerings()
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

    from functions.shared.domain.errors import SignalUnavailable

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
