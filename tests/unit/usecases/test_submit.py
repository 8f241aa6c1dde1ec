"""POST /jobs: a job is recorded and its workflow started; what this deployment cannot run is refused."""

from __future__ import annotations

import json

import pytest

from functions.shared.domain.core.errors import NoCandidate, RequestRefused
from functions.shared.domain.core.vocabulary import JobStatus
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.usecases.jobs.submit import start_job
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
        "provision_timeout_seconds": ports.settings.provision_timeout_seconds,
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


# -- fail fast: what could never start is a 400, and nothing is recorded or started -------------------
def test_a_request_no_offering_can_serve_is_refused_with_every_rejection_and_nothing_starts(ports):
    # Given a budget below every price
    with pytest.raises(NoCandidate) as refused:
        start_job(request(max_hourly_usd=0.01), ports)

    # Then the refusal names the field and lists why each offering was left out; nothing was recorded
    assert refused.value.field == "max_hourly_usd"
    by_budget = [r for r in refused.value.rejected if r.field == "max_hourly_usd"]
    assert len(by_budget) > 10 and all("max_hourly_usd $0.01" in r.reason for r in by_budget)
    assert ports.jobs.records == {} and ports.workflow.executions == {}


def test_an_instance_type_that_is_not_a_gpu_is_refused_naming_it(ports):
    with pytest.raises(NoCandidate) as refused:
        start_job(request(instance_types=["m5.large"]), ports)
    assert refused.value.field == "instance_types"
    assert next(r.instance_type for r in refused.value.rejected if r.field == "instance_types") == "m5.large"


def test_an_unknown_gpu_model_is_refused_listing_the_known_ones(ports):
    with pytest.raises(RequestRefused) as refused:
        start_job(request(gpu_models=["H9000"]), ports)
    assert refused.value.field == "gpu_models"
    assert "H9000" in refused.value.message and "A10G" in refused.value.message and "L4" in refused.value.message


def test_a_zone_outside_the_deployment_is_refused(ports):
    with pytest.raises(RequestRefused) as refused:
        start_job(request(zones=["us-west-2a"]), ports)
    assert refused.value.field == "zones" and "us-east-1a" in refused.value.message


def test_a_quota_of_zero_is_refused_with_how_to_raise_it(ports):
    ports.quotas.values["L-DB2E81BA"] = 0
    ports.quotas.values["L-417A185B"] = 0
    with pytest.raises(NoCandidate) as refused:
        start_job(request(), ports)
    assert refused.value.field == "capacity"
    assert "request-service-quota-increase" in refused.value.message


def test_a_job_that_can_start_answers_with_its_warnings(ports):
    # Given a request only one zone can serve
    response = start_job(request(zones=["us-east-1a"]), ports)
    assert any("one zone only (us-east-1a)" in w for w in response.warnings)


def test_give_up_after_minutes_shortens_the_first_wait(ports):
    response = start_job(request(stuck_after_minutes=15, give_up_after_minutes=2), ports)
    execution_input = json.loads(ports.workflow.executions[response.execution_arn])
    assert execution_input["timeouts"]["stuck_after_seconds"] == 120


def test_the_provisioning_timeout_the_deployment_sets_bounds_each_attempt_s_wait_for_its_pool(ports):
    # Given a deployment that gives pools a minute (GPUPILOT_PROVISION_TIMEOUT_SECONDS)
    object.__setattr__(ports, "settings", ports.settings.model_copy(update={"provision_timeout_seconds": 60}))
    # When a job is started / Then its workflow carries that timeout to EnsureJobQueue
    response = start_job(request(), ports)
    execution_input = json.loads(ports.workflow.executions[response.execution_arn])
    assert execution_input["timeouts"]["provision_timeout_seconds"] == 60


# -- a keyed submit: one job per Idempotency-Key, whatever failed --------------------------------------
class TimedOut(BaseException):
    """Lambda stopping a function at its timeout: nothing of the function runs after it, not even its handlers."""


def test_a_keyed_submit_whose_answer_was_lost_gives_the_retry_the_job_it_started(ports):
    # Given a keyed submit that recorded and started its job, and whose answer never reached the client (the
    # idempotency record's completion failed: the key is freed once that call would have timed out)
    first = start_job(request(), ports, key="nightly-42")

    # When the client retries with the same key and body
    again = start_job(request(), ports, key="nightly-42")

    # Then it gets that job, said to be already submitted, and no second job or workflow was made
    assert (again.job_id, again.execution_arn) == (first.job_id, first.execution_arn)
    assert again.already_submitted and not first.already_submitted
    assert list(ports.jobs.records) == [first.job_id]
    assert list(ports.workflow.executions) == [first.execution_arn]


def test_a_keyed_submit_that_recorded_its_job_but_never_started_it_starts_it_on_the_retry(ports, monkeypatch):
    # Given a keyed submit whose call was stopped between recording the job and starting its workflow
    def stopped(*args):
        raise TimedOut

    monkeypatch.setattr(ports.workflow, "start_execution", stopped)
    with pytest.raises(TimedOut):
        start_job(request(), ports, key="nightly-43")
    monkeypatch.undo()
    (recorded,) = ports.jobs.records

    # When the client retries
    again = start_job(request(), ports, key="nightly-43")

    # Then that job's workflow starts, once, and the record knows it
    assert again.job_id == recorded
    assert list(ports.workflow.executions) == [again.execution_arn]
    assert ports.jobs.get_job(recorded).execution_arn == again.execution_arn


def test_a_keyed_submit_whose_workflow_could_not_start_leaves_the_retry_a_new_job(ports, monkeypatch):
    # Given a keyed submit whose workflow Step Functions refused to start: the job failed, its key released
    def refused(*args):
        raise RuntimeError("StateMachineDoesNotExist")

    monkeypatch.setattr(ports.workflow, "start_execution", refused)
    with pytest.raises(RuntimeError):
        start_job(request(), ports, key="nightly-44")
    monkeypatch.undo()
    (failed,) = ports.jobs.records

    # When the client retries with the same key once Step Functions is back
    again = start_job(request(), ports, key="nightly-44")

    # Then it is a new job that starts; the failed one keeps its outcome
    assert again.job_id != failed and ports.jobs.get_job(failed).status == JobStatus.FAILED
    assert list(ports.workflow.executions) == [again.execution_arn]


def test_the_same_key_and_body_after_the_key_s_window_make_a_new_job(ports):
    # Given a keyed submit made more than a day ago
    first = start_job(request(), ports, key="nightly-45")
    ports.jobs.records[first.job_id].created_at = "2020-01-01T00:00:00.000Z"

    # When the same key and body come again / Then it is a new job
    assert start_job(request(), ports, key="nightly-45").job_id != first.job_id
