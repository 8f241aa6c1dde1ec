"""POST /jobs: a job is recorded and its workflow started; what this deployment cannot run is refused."""

from __future__ import annotations

import json

import pytest

from functions.shared.domain.errors import RequestRefused
from functions.shared.domain.requests import JobRequest
from functions.shared.domain.vocabulary import JobStatus
from functions.shared.usecases.submit import start_job
from tests.unit.usecases.conftest import REQUEST

ALLOWED_SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gpupilot/hf-AbCdEf"


def request(**fields) -> JobRequest:
    return JobRequest.model_validate(REQUEST | fields)


def test_a_job_is_recorded_then_its_workflow_started_with_its_timeouts(ports):
    # Given / When
    response = start_job(request(stuck_after_minutes=2, timeout_minutes=10), ports)

    # Then the record is SUBMITTED with the execution's ARN, and the execution input carries the timeouts
    record = ports.jobs.get_job(response.job_id)
    assert (record.status, record.execution_arn) == (JobStatus.SUBMITTED, response.execution_arn)
    execution_input = json.loads(ports.workflow.executions[response.execution_arn])
    assert execution_input["job_id"] == response.job_id
    assert execution_input["timeouts"] == {
        "stuck_after_seconds": 120,
        "finish_after_seconds": 3 * (600 + 600),
        "queue_poll_seconds": ports.settings.queue_poll_seconds,
    }


def test_a_secret_the_execution_role_may_read_is_accepted(ports):
    # Given / When / Then
    assert start_job(request(secrets={"HF_TOKEN": ALLOWED_SECRET}), ports).status == JobStatus.SUBMITTED


def test_a_secret_outside_what_the_execution_role_may_read_is_refused_naming_it(ports):
    # Given a secret in another path
    other = "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-password-AbCdEf"

    # When / Then: refused before anything is recorded
    with pytest.raises(RequestRefused) as refused:
        start_job(request(secrets={"DB_PASSWORD": other}), ports)
    assert refused.value.field == "secrets.DB_PASSWORD"
    assert ports.jobs.records == {}


def test_a_job_role_gpupilot_may_not_pass_is_refused(ports):
    # Given / When / Then
    with pytest.raises(RequestRefused) as refused:
        start_job(request(job_role_arn="arn:aws:iam::123456789012:role/admin"), ports)
    assert refused.value.field == "job_role_arn"


def test_a_job_role_matching_the_deployments_pattern_is_accepted(ports):
    # Given / When / Then
    role = "arn:aws:iam::123456789012:role/gpupilot-job-train"
    assert start_job(request(job_role_arn=role), ports).status == JobStatus.SUBMITTED


def test_a_workflow_that_cannot_start_leaves_a_failed_job_not_a_silent_one(ports):
    # Given Step Functions refusing the execution
    def refuse(name: str, execution_input: str) -> str:
        raise RuntimeError("ExecutionLimitExceeded")

    ports.workflow.start_execution = refuse  # type: ignore[method-assign]

    # When / Then
    with pytest.raises(RuntimeError):
        start_job(request(), ports)
    (record,) = ports.jobs.records.values()
    assert (record.status, record.error) == (JobStatus.FAILED, "could not start the workflow: ExecutionLimitExceeded")
