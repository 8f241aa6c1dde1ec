"""GET and DELETE /jobs/{id}: the public view, and a cancel that leaves no GPU running."""

from __future__ import annotations

import pytest

from functions.shared.domain.core.errors import JobAlreadyFinished, JobNotFound
from functions.shared.domain.core.vocabulary import AttemptStatus, BatchStatus, JobStatus
from functions.shared.domain.cost.attempts import Cost
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.usecases.jobs.queries import cancel_job, get_job, list_jobs
from functions.shared.usecases.jobs.submit import start_job
from tests.unit.usecases.conftest import JOB_ID, REQUEST, submitted


def test_cancel_terminates_the_live_attempt_then_stops_the_workflow(ports):
    # Given a job whose attempt was submitted and whose workflow runs
    submitted(ports)
    ports.jobs.set_execution_arn(JOB_ID, "arn:aws:states:us-east-1:123456789012:execution:GpuJob:x")
    (batch_job_id,) = ports.batch.jobs

    # When cancelled
    view = cancel_job(JOB_ID, ports)

    # Then
    assert view.status == JobStatus.CANCELLED
    assert (view.timeline[-1].status, view.timeline[-1].reason) == (JobStatus.CANCELLED, "cancelled by request")
    assert ports.batch.terminated == [(batch_job_id, "cancelled by request")]
    assert ports.workflow.stopped == ["arn:aws:states:us-east-1:123456789012:execution:GpuJob:x"]


def test_a_finished_job_cannot_be_cancelled(ports):
    # Given / When / Then
    submitted(ports)
    ports.jobs.finish(JOB_ID, JobStatus.SUCCEEDED)
    with pytest.raises(JobAlreadyFinished):
        cancel_job(JOB_ID, ports)


def test_a_job_whose_attempt_batch_says_succeeded_cannot_be_cancelled_though_the_workflow_has_yet_to_say_so(ports):
    # Given a job whose attempt Batch says SUCCEEDED, priced, before RecordCost records the job's outcome
    submitted(ports)
    cost = Cost(usd=0.01, hourly_usd=0.526, runtime_seconds=60, gpu_share=1, pricing="on-demand us-east-1")
    ended = {"batch_status": BatchStatus.SUCCEEDED, "status": AttemptStatus.SUCCEEDED, "cost": cost}
    ports.jobs.update_attempt(JOB_ID, 1, ended)

    # When cancelled / Then it is finished already, and it stays the success its view shows
    with pytest.raises(JobAlreadyFinished):
        cancel_job(JOB_ID, ports)
    assert get_job(JOB_ID, ports).status == JobStatus.SUCCEEDED and ports.batch.terminated == []


def test_an_unknown_job_is_not_found(ports):
    with pytest.raises(JobNotFound):
        get_job("ffffffffffffffffffff", ports)


def test_jobs_are_listed_newest_first_a_page_at_a_time(ports):
    # Given three jobs
    ids = [start_job(JobRequest.model_validate(REQUEST), ports).job_id for _ in range(3)]

    # When listing two per page
    first = list_jobs(None, 2, None, ports)
    second = list_jobs(None, 2, first.next_token, ports)

    # Then every job is listed once
    assert sorted(j.job_id for j in first.jobs + second.jobs) == sorted(ids)
    assert second.next_token is None
