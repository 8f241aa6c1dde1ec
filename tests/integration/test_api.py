"""The api handler with API Gateway proxy events, against moto (the workflow is started, not run)."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from functions.shared import constants as c
from functions.shared.adapters import idempotency
from functions.shared.adapters.clients import observe_calls, reset_clients, stop_observing
from functions.shared.adapters.job_store import DynamoJobStore
from functions.shared.domain.core.vocabulary import JobStatus
from functions.shared.domain.requests.job_request import JobRequest
from gpupilot.localcloud.gateway_event import proxy_event
from tests.integration.conftest import ZONES, Cloud, HandlerError

BODY = {"name": "train", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi"]}
ALLOWED_SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gpupilot/hf-token-AbCdEf"


def call(
    cloud: Cloud, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    raw = body if isinstance(body, str) or body is None else json.dumps(body)
    sent = ({"Content-Type": "application/json"} if raw is not None else {}) | (headers or {})
    response = cloud.invoke("api", proxy_event(method, path, sent, raw))
    return response["statusCode"], json.loads(response["body"])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (BODY | {"gpus": 9}, "gpus"),
        (BODY | {"name": "bad name!"}, "name"),
        (BODY | {"command": []}, "command"),
        (BODY | {"stuck_after_minutes": 0}, "stuck_after_minutes"),
        (BODY | {"capacity": "reserved"}, "capacity"),
        (BODY | {"colour": "green"}, "colour"),
        ({k: v for k, v in BODY.items() if k != "image"}, "image"),
        ("{not json", "body"),
        ("[1, 2]", "body"),
        (json.dumps(BODY)[:-1] + ', "max_hourly_usd": Infinity}', "max_hourly_usd"),
        (BODY | {"max_hourly_usd": 1e200}, "max_hourly_usd"),
        (BODY | {"stuck_after_minutes": 1e-300}, "stuck_after_minutes"),
        (BODY | {"min_gpu_memory_gib": 1e-200}, "min_gpu_memory_gib"),
        (BODY | {"environment": {"A": "x" * 500_000}}, "environment"),
        (BODY | {"environment": {"A": "\ud800"}}, "environment"),
        (BODY | {"command": ["python", "\ud800"]}, "command.1"),
        (BODY | {"image": "x" * 256}, "image"),
        # Found by the property-based tests: DynamoDB cannot store a number below 1e-130
        (BODY | {"give_up_after_minutes": 4.78e-183}, "give_up_after_minutes"),
        (BODY | {"command": ["python", ""]}, "command.1"),
        (BODY | {"zones": []}, "zones"),
        (BODY | {"gpus": "2"}, "gpus"),
        (BODY | {"gpus": 2.5}, "gpus"),
        (BODY | {"price_band": 0.5}, "price_band"),
        (BODY | {"price_band": "wide"}, "price_band"),
        # Refused at once rather than after a GPU has booted to pull them
        (BODY | {"image": "a b"}, "image"),
        (BODY | {"image": ":::"}, "image"),
        (BODY | {"image": "nvidia/c\u00fcda:12"}, "image"),
        (BODY | {"environment": {"A=B": "x"}}, "environment"),
        (BODY | {"environment": {"A": "x\u0000y"}}, "environment"),
        (BODY | {"checkpoint": {"grace_seconds": 115}}, "checkpoint.grace_seconds"),
        (BODY | {"checkpoint": "yes"}, "checkpoint"),
        (BODY | {"idle_policy": {"after_minutes": 30, "action": "kill"}}, "idle_policy.action"),
    ],
)
def test_bad_job_bodies_get_a_400_that_names_the_field(cloud: Cloud, body: Any, field: str) -> None:
    status, error = call(cloud, "POST", "/jobs", body)
    assert status == 400
    assert error["field"] == field
    assert error["message"]


def test_a_valid_job_is_accepted_recorded_and_its_workflow_started(cloud: Cloud) -> None:
    status, submitted = call(cloud, "POST", "/jobs", BODY)
    execution = boto3.client("stepfunctions").describe_execution(executionArn=submitted["execution_arn"])
    workflow_input = json.loads(execution["input"])
    _, job = call(cloud, "GET", f"/jobs/{submitted['job_id']}")
    assert status == 202
    assert submitted["status"] == "SUBMITTED"
    assert execution["name"] == submitted["job_id"]
    assert workflow_input["timeouts"] == {
        "stuck_after_seconds": 900,
        "finish_after_seconds": 3 * (3600 + 600),
        "queue_poll_seconds": 10,
        "provision_timeout_seconds": 1800,
    }
    assert job["request"]["gpus"] == 1
    assert job["timeline"][0]["status"] == "SUBMITTED"


def test_the_same_idempotency_key_and_body_return_the_same_job(cloud: Cloud) -> None:
    headers = {"Idempotency-Key": "retry-me"}
    _, first = call(cloud, "POST", "/jobs", BODY, headers)
    _, second = call(cloud, "POST", "/jobs", BODY, headers)
    _, listed = call(cloud, "GET", "/jobs")
    assert second["job_id"] == first["job_id"]
    assert len(listed["jobs"]) == 1


def test_a_replayed_idempotency_key_says_the_job_was_already_submitted(cloud: Cloud) -> None:
    # Given a job submitted with a key
    headers = {"Idempotency-Key": "say-so"}
    _, first = call(cloud, "POST", "/jobs", BODY, headers)
    # When the same key and body come again
    _, second = call(cloud, "POST", "/jobs", BODY, headers)
    # Then the first answer is new and the second says it is the same job, submitted before
    assert (first["already_submitted"], second["already_submitted"]) == (False, True)
    assert second["job_id"] == first["job_id"]


def test_a_submitted_job_answers_with_the_plan_it_starts_with(cloud: Cloud) -> None:
    # Given / When a job is submitted
    _, submitted = call(cloud, "POST", "/jobs", BODY | {"max_attempts": 2})
    _, plan = call(cloud, "POST", "/plan", BODY | {"max_attempts": 2})
    # Then its answer names the first choice and the fallbacks the workflow may try, as /plan ranks them
    assert [c["instance_type"] for c in submitted["candidates"]] == [c["instance_type"] for c in plan["candidates"][:2]]
    assert submitted["candidates"][0]["hourly_usd"] > 0


def test_an_idempotency_key_reused_with_another_body_is_a_422(cloud: Cloud) -> None:
    headers = {"Idempotency-Key": "retry-me"}
    call(cloud, "POST", "/jobs", BODY, headers)
    status, error = call(cloud, "POST", "/jobs", BODY | {"gpus": 2}, headers)
    assert status == 422
    assert (error["error"], error["field"]) == ("IdempotencyKeyReused", "Idempotency-Key")


def test_an_unknown_job_is_a_404(cloud: Cloud) -> None:
    status, error = call(cloud, "GET", "/jobs/doesnotexist")
    assert status == 404
    assert error["field"] == "job_id"


@pytest.mark.parametrize(
    ("query", "field"),
    [("limit=0", "limit"), ("limit=abc", "limit"), ("status=DONE", "status"), ("next_token=x", "next_token")],
)
def test_bad_list_parameters_get_a_400_naming_them(cloud: Cloud, query: str, field: str) -> None:
    status, error = call(cloud, "GET", f"/jobs?{query}")
    assert status == 400
    assert error["field"] == field


def test_cancelling_stops_the_job_and_cancelling_again_is_a_409(cloud: Cloud) -> None:
    _, submitted = call(cloud, "POST", "/jobs", BODY)
    status, cancelled = call(cloud, "DELETE", f"/jobs/{submitted['job_id']}")
    again, error = call(cloud, "DELETE", f"/jobs/{submitted['job_id']}")
    execution = boto3.client("stepfunctions").describe_execution(executionArn=submitted["execution_arn"])
    assert status == 202
    assert cancelled["status"] == "CANCELLED"
    assert execution["status"] == "ABORTED"
    assert again == 409 and error["error"] == "JobAlreadyFinished"


def test_plan_ranks_candidates_and_explains_rejections(cloud: Cloud) -> None:
    status, plan = call(cloud, "POST", "/plan", BODY | {"gpus": 4, "gpu_models": ["A10G", "L4"]})
    first = plan["candidates"][0]
    rejected = {r["instance_type"]: r["reason"] for r in plan["rejected"]}
    assert status == 200
    assert first["gpu_model"] == "A10G" and first["gpus"] >= 4
    assert plan["candidates"] and all(c["gpu_model"] in ("A10G", "L4") for c in plan["candidates"])
    assert "1 GPU, request needs 4" in rejected["g5.xlarge"]
    assert rejected["g5g.xlarge"].startswith("arm64 instance")


def test_costs_with_a_bad_date_name_the_parameter(cloud: Cloud) -> None:
    status, error = call(cloud, "GET", "/costs?from=yesterday")
    assert status == 400 and error["field"] == "from"
    # An empty `to`, or ISO 8601's other spellings of a day, are not the OpenAPI's `format: date` either
    for query in ("to=", "to=20261123", "from=2026-W47-1"):
        status, error = call(cloud, "GET", f"/costs?{query}")
        assert status == 400 and error["field"] == query.split("=")[0], query


def test_costs_up_to_a_day_start_thirty_days_before_that_day(cloud: Cloud) -> None:
    # Given only the last day / When costs are asked for
    status, report = call(cloud, "GET", "/costs?to=2025-03-10")
    # Then the window is the 30 days before it, not before today
    assert status == 200, report
    assert (report["from"], report["to"]) == ("2025-02-08", "2025-03-10")
    # (and from the first day there is, for a `to` in the calendar's first month)
    status, report = call(cloud, "GET", "/costs?to=0001-01-10")
    assert (status, report["from"]) == (200, "0001-01-01")


def test_a_whole_number_written_as_a_float_is_a_whole_number(cloud: Cloud) -> None:
    # JSON Schema's integer includes 2.0; "2" and true stay refused (above)
    status, answer = call(cloud, "POST", "/plan", BODY | {"gpus": 1.0, "max_attempts": 3.0})
    assert status == 200, answer


def test_a_path_no_route_takes_is_a_404_in_the_error_shape(cloud: Cloud) -> None:
    for path in ("/jobs/%0A", "/jobs/a%09b", "/nowhere"):
        status, error = call(cloud, "GET", path)
        assert status == 404 and set(error) >= {"error", "message"}, (path, error)
        assert error["error"] == "NotFound" and error["field"] == "path"


def test_a_sweep_id_is_printable_ascii(cloud: Cloud) -> None:
    status, error = call(cloud, "GET", "/health?sweep_id=a%20b")
    assert status == 400 and error["field"] == "sweep_id"


def test_post_sweep_starts_a_sweep_in_the_sweep_function_and_answers_at_once(cloud: Cloud) -> None:
    # Given no sweep yet
    _, before = call(cloud, "GET", "/health")
    # When a sweep is asked for
    status, started = call(cloud, "POST", "/sweep")
    # Then the api answers 202 with its id, and the sweep function (invoked asynchronously) records it
    assert (before["swept_at"], before["status"], before["findings"]) == (None, None, [])  # no sweep stands behind it
    assert status == 202 and started["sweep_id"].startswith("sweep-")
    cloud.dispatcher.join_background()
    found, report = call(cloud, "GET", f"/health?sweep_id={started['sweep_id']}")
    _, latest = call(cloud, "GET", "/health")
    assert (found, report["status"]) == (200, "COMPLETE")
    assert latest["sweep_id"] == started["sweep_id"]


def test_an_unknown_sweep_is_a_404(cloud: Cloud) -> None:
    status, error = call(cloud, "GET", "/health?sweep_id=sweep-nope")
    assert (status, error["field"]) == (404, "sweep_id")


def test_a_status_filtered_page_is_filled_across_dynamodb_pages(cloud: Cloud) -> None:
    # Given one FAILED job under newer ones
    store = DynamoJobStore(cloud.deployment.table_name)
    store.create_job("failed000001", JobRequest.model_validate(BODY))
    store.finish("failed000001", JobStatus.FAILED)
    for index in range(3):
        store.create_job(f"newer00000{index}", JobRequest.model_validate(BODY))
    # When listing FAILED jobs one at a time
    status, page = call(cloud, "GET", "/jobs?status=FAILED&limit=1")
    # Then the page holds the FAILED job, not an empty page with a token
    assert status == 200
    assert [job["job_id"] for job in page["jobs"]] == ["failed000001"]


def test_every_route_of_the_contract_is_served_by_the_handler(cloud: Cloud) -> None:
    from functions.shared.api.contract import ROUTES

    for route in ROUTES:
        path = route.path.replace("{job_id}", "nosuchjob")
        if route.operation_id == "sweep":
            continue  # starts a real sweep: covered above
        status, body = call(cloud, route.method, path, BODY if route.json_body else None)
        # Powertools' own "route not found" has no `error`; ours always names what went wrong.
        assert status in (route.status, *route.errors), (route.method, path, status, body)
        assert status < 400 or "error" in body, (route.method, path, body)


def test_a_secret_this_deployment_may_read_is_accepted_and_another_refused_naming_it(cloud: Cloud) -> None:
    # Given the template's secret patterns in the api's environment (gpupilot/ in this account and region)
    accepted, _ = call(cloud, "POST", "/jobs", BODY | {"secrets": {"HF_TOKEN": ALLOWED_SECRET}})
    other = "arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/db-AbCdEf"
    refused, error = call(cloud, "POST", "/jobs", BODY | {"secrets": {"DB": other}})
    assert accepted == 202
    assert (refused, error["field"]) == (400, "secrets.DB")


def test_a_job_role_outside_the_deployments_pattern_is_refused(cloud: Cloud) -> None:
    role = "arn:aws:iam::123456789012:role/gpupilot-job-train"
    accepted, _ = call(cloud, "POST", "/jobs", BODY | {"job_role_arn": role})
    refused, error = call(cloud, "POST", "/jobs", BODY | {"job_role_arn": "arn:aws:iam::123456789012:role/admin"})
    assert accepted == 202
    assert (refused, error["field"]) == (400, "job_role_arn")


def test_a_sweep_still_running_reads_as_running(cloud: Cloud) -> None:
    # Given a sweep recorded as started whose function has not finished it
    from functions.shared.adapters.table_store import DynamoHealthStore

    DynamoHealthStore(cloud.deployment.table_name).start_sweep("sweep-in-flight")
    # When it is read / Then it is RUNNING, not yet swept
    status, report = call(cloud, "GET", "/health?sweep_id=sweep-in-flight")
    assert (status, report["status"], report["swept_at"]) == (200, "RUNNING", None)


def test_a_submit_whose_workflow_could_not_start_can_be_retried_with_its_idempotency_key(cloud: Cloud) -> None:
    # Given Step Functions refusing to start the workflow (the state machine is gone)
    sfn = boto3.client("stepfunctions")
    sfn.delete_state_machine(stateMachineArn=cloud.deployment.state_machine_arn)
    headers = {"Idempotency-Key": "retry-after-outage"}
    # When a keyed submit fails
    from tests.integration.conftest import HandlerError

    with pytest.raises(HandlerError):
        call(cloud, "POST", "/jobs", BODY, headers)
    # Then the key is released (not stuck IN_PROGRESS): the retry is a new attempt, which fails the same way
    with pytest.raises(HandlerError, match="StateMachineDoesNotExist"):
        call(cloud, "POST", "/jobs", BODY, headers)


@contextlib.contextmanager
def observing(observer: Any) -> Iterator[None]:
    """Every AWS call the functions make goes past `observer` meanwhile (clients take the hooks they are made with:
    the cached ones, and the idempotency layer's, are made again on both sides)."""
    idempotency._persistence.cache_clear()
    reset_clients()
    observe_calls(observer)
    try:
        yield
    finally:
        stop_observing(observer)
        idempotency._persistence.cache_clear()
        reset_clients()


def test_a_keyed_submit_whose_success_was_not_recorded_gives_its_job_to_the_retry_once_its_call_has_timed_out(
    cloud: Cloud,
) -> None:
    # Given DynamoDB refusing, past botocore's retries, the write that completes the key's idempotency record,
    # after the submit recorded and started its job
    table = cloud.deployment.table_name

    def refuse_completion(params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "UpdateItem" and params.get("Key", {}).get("pk", {}).get("S", "").startswith("IDEMPOTENCY#"):
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "Rate exceeded"}}, "UpdateItem")

    with observing(refuse_completion), pytest.raises(HandlerError, match="IdempotencyPersistenceLayerError"):
        call(cloud, "POST", "/jobs", BODY, {"Idempotency-Key": "lost-answer"})
    (first,) = call(cloud, "GET", "/jobs")[1]["jobs"]

    # When the client retries at once: the key is held by the call in progress, no longer than it could run
    status, error = call(cloud, "POST", "/jobs", BODY, {"Idempotency-Key": "lost-answer"})
    assert (status, error["error"]) == (409, "IN_PROGRESS")
    dynamodb = boto3.client("dynamodb")
    held = {":i": {"S": "IDEMPOTENCY#"}}
    (record,) = dynamodb.scan(TableName=table, FilterExpression="begins_with(pk, :i)", ExpressionAttributeValues=held)[
        "Items"
    ]
    held_until = int(record["in_progress_expiration"]["N"]) / 1000
    assert held_until <= time.time() + c.LAMBDAS_BY_KEY["api"].timeout_seconds
    # ... and again once that call would have timed out (its hold lapsed)
    lapsed = {":t": {"N": str(int((time.time() - 1) * 1000))}}
    key = {"pk": record["pk"], "sk": record["sk"]}
    dynamodb.update_item(
        TableName=table, Key=key, UpdateExpression="SET in_progress_expiration = :t", ExpressionAttributeValues=lapsed
    )
    status, answer = call(cloud, "POST", "/jobs", BODY, {"Idempotency-Key": "lost-answer"})

    # Then it gets the job the first call made and started, not a second one
    assert (status, answer["job_id"]) == (202, first["job_id"])
    assert [job["job_id"] for job in call(cloud, "GET", "/jobs")[1]["jobs"]] == [first["job_id"]]
    executions = boto3.client("stepfunctions").list_executions(stateMachineArn=cloud.deployment.state_machine_arn)
    assert [e["name"] for e in executions["executions"]] == [first["job_id"]]


def test_a_job_no_offering_can_serve_is_a_400_listing_every_rejection_and_starts_nothing(cloud: Cloud) -> None:
    status, body = call(cloud, "POST", "/jobs", BODY | {"min_gpu_memory_gib": 1000})
    assert (status, body["error"], body["field"]) == (400, "NoCandidate", "min_gpu_memory_gib")
    assert body["rejected"] and all({"instance_type", "reason"} <= set(r) for r in body["rejected"])
    assert (
        boto3.client("stepfunctions").list_executions(stateMachineArn=cloud.deployment.state_machine_arn)["executions"]
        == []
    )


def test_an_unknown_gpu_model_is_a_400_listing_the_known_ones(cloud: Cloud) -> None:
    status, body = call(cloud, "POST", "/plan", BODY | {"gpu_models": ["H9000"]})
    assert (status, body["field"]) == (400, "gpu_models")
    assert "H9000" in body["message"] and "A10G" in body["message"]


def test_a_spot_plan_is_priced_from_spot_history_scored_and_explained(cloud: Cloud) -> None:
    status, plan = call(cloud, "POST", "/plan", BODY | {"capacity": "spot-first", "gpu_models": ["A10G"]})
    assert status == 200
    first, second = plan["candidates"][:2]
    assert (first["capacity"], second["capacity"]) == ("spot", "on-demand")
    assert first["instance_type"] == second["instance_type"]
    assert first["pricing"].startswith("spot price history") and first["hourly_usd"] < second["hourly_usd"]
    assert "spot placement score 9/10" in first["why"] and first["placement_score"] == 9
    assert isinstance(plan["warnings"], list)


def test_a_job_answers_with_its_warnings(cloud: Cloud) -> None:
    status, body = call(cloud, "POST", "/jobs", BODY | {"zones": [ZONES[0]]})
    assert status == 202
    assert any("one zone only" in w for w in body["warnings"])


def _ran(cloud: Cloud, job_id: str, stream: str) -> None:
    """A job whose first attempt ran and whose log stream holds two lines, in Batch's log group."""
    from functions.shared.domain.core.vocabulary import AttemptStatus, CapacityType
    from functions.shared.domain.jobs.records import AttemptRecord

    store = DynamoJobStore(cloud.deployment.table_name)
    store.create_job(job_id, JobRequest.model_validate(BODY))
    attempt = AttemptRecord(instance_type="g5.xlarge", capacity=CapacityType.ON_DEMAND, job_queue="gpupilot-q",
                            status=AttemptStatus.RUNNING, batch_job_id="b-1", log_stream=stream)  # fmt: skip
    store.put_attempt(job_id, 1, attempt)
    logs = boto3.client("logs")
    logs.create_log_group(logGroupName="/aws/batch/job")
    logs.create_log_stream(logGroupName="/aws/batch/job", logStreamName=stream)
    now = int(time.time() * 1000)  # CloudWatch Logs refuses events more than 2 hours in the future
    events = [{"timestamp": now, "message": "step 1"}, {"timestamp": now + 1, "message": "ok"}]
    logs.put_log_events(logGroupName="/aws/batch/job", logStreamName=stream, logEvents=events)


def test_a_job_s_logs_are_read_from_its_attempt_s_stream_with_the_api_s_own_grant(cloud: Cloud) -> None:
    # Given a job whose attempt ran and printed two lines to its stream under GPU Pilot's prefix
    _ran(cloud, "logs00000001", "gpupilot/default/task-1")

    # When its logs are read through the API (the api function's role enforced), then read on from the token
    status, page = call(cloud, "GET", "/jobs/logs00000001/logs")
    again, later = call(cloud, "GET", f"/jobs/logs00000001/logs?next_token={page['next_token']}")

    # Then both lines come oldest first, and reading on from the end gives none and the same token
    assert status == 200 and [e["message"] for e in page["events"]] == ["step 1", "ok"]
    assert (page["log_group"], page["log_stream"], page["attempt"]) == ("/aws/batch/job", "gpupilot/default/task-1", 1)
    assert again == 200 and later["events"] == [] and later["next_token"] == page["next_token"]


@pytest.mark.parametrize(("query", "field", "code"), [("attempt=0", "attempt", 400), ("attempt=x", "attempt", 400),
                                                      ("attempt=2", "attempt", 404),
                                                      ("next_token=not-a-token", "next_token", 400)])  # fmt: skip
def test_bad_log_parameters_name_the_parameter(cloud: Cloud, query: str, field: str, code: int) -> None:
    _ran(cloud, "logs00000003", "gpupilot/default/task-3")
    status, error = call(cloud, "GET", f"/jobs/logs00000003/logs?{query}")
    assert (status, error["field"]) == (code, field)
