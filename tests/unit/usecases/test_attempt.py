"""SubmitBatchJob: one Batch job per attempt, whatever retries and cancels do."""

from __future__ import annotations

import pytest

from functions.shared.domain.core.errors import JobAlreadyFinished
from functions.shared.domain.core.vocabulary import JobStatus
from functions.shared.domain.jobs.steps import SubmitInput
from functions.shared.usecases.jobs.attempt import submit_batch_job
from tests.unit.usecases.conftest import JOB_ID, ready_queue, selected


def payload(ports, **request) -> SubmitInput:
    parsed, selection = selected(ports, **request)
    return SubmitInput(job_id=JOB_ID, request=parsed, selection=selection, queue=ready_queue(selection))


def test_the_attempt_is_submitted_under_its_traceable_name_and_recorded(ports):
    # Given a job whose pool is ready
    step = payload(ports)

    # When submitting
    submitted = submit_batch_job(step, ports)

    # Then Batch has one job named after the job and attempt, and the record knows it
    (job,) = ports.batch.jobs.values()
    assert job["jobName"] == f"gpupilot-{JOB_ID}-a1"
    assert job["jobQueue"] == step.queue.job_queue
    assert job["tags"] == {"gpupilot:job": JOB_ID, "gpupilot:attempt": "1"}
    record = ports.jobs.get_job(JOB_ID)
    assert record.attempts[1].batch_job_id == submitted.batch_job_id
    assert record.status == JobStatus.RUNNABLE


def test_a_retried_submit_returns_the_same_batch_job(ports):
    # Given an attempt already submitted
    step = payload(ports)
    first = submit_batch_job(step, ports)

    # When SubmitBatchJob is retried
    second = submit_batch_job(step, ports)

    # Then no second Batch job exists
    assert second == first
    assert len(ports.batch.jobs) == 1


def test_a_submit_whose_record_write_was_lost_adopts_the_batch_job_it_made(ports):
    # Given a Batch job submitted for attempt 1 that the record never learnt about
    step = payload(ports)
    orphan = ports.batch.submit_job(f"gpupilot-{JOB_ID}-a1", step.queue.job_queue, "def:1", {})

    # When SubmitBatchJob runs (again)
    submitted = submit_batch_job(step, ports)

    # Then it adopts that job instead of submitting another
    assert submitted.batch_job_id == orphan
    assert len(ports.batch.jobs) == 1


def test_a_job_cancelled_during_its_submit_has_its_batch_job_terminated(ports):
    # Given a job cancelled while SubmitBatchJob was running
    step = payload(ports)
    ports.jobs.finish(JOB_ID, JobStatus.CANCELLED)

    # When the submit completes / Then it terminates what it submitted and says so
    with pytest.raises(JobAlreadyFinished):
        submit_batch_job(step, ports)
    (batch_job_id,) = ports.batch.jobs
    assert ports.batch.terminated == [(batch_job_id, "cancelled by request")]


def test_the_job_runs_as_the_deployments_job_role_with_its_gpu_requirements(ports):
    # Given / When
    submit_batch_job(payload(ports, gpus=1), ports)

    # Then
    (definition,) = ports.batch.definitions
    container = definition["containerProperties"]
    assert container["jobRoleArn"] == ports.settings.job_role_arn
    assert {"type": "GPU", "value": "1"} in container["resourceRequirements"]


def test_a_job_of_a_deployment_whose_teams_share_by_weight_is_submitted_under_its_team_s_share():
    import dataclasses

    from tests.fakes.ports import fake_ports

    # Given a deployment whose pools share by weight, and one without
    shared = fake_ports()
    shared = dataclasses.replace(
        shared, settings=shared.settings.model_copy(update={"fair_share_policy": "gpupilot-fair-share"})
    )
    fifo = fake_ports()
    # When each submits a job of team vision
    for ports in (shared, fifo):
        step = payload(ports).model_copy(update={"share": "vision"})
        submit_batch_job(step, ports)
    # Then the first reaches Batch under the team's share; the second under none (a FIFO queue refuses one)
    [job], [plain] = list(shared.batch.jobs.values()), list(fifo.batch.jobs.values())
    assert job["shareIdentifier"] == "vision" and "shareIdentifier" not in plain
