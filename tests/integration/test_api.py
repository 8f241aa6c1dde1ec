"""The api handler with API Gateway proxy events, against moto (the workflow is started, not run)."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest

from functions.api.handler import handler
from gpupilot.localcloud.deploy import Deployment
from gpupilot.localcloud.http_api import proxy_event

BODY = {"name": "train", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi"]}


def call(
    context: Any, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    raw = body if isinstance(body, str) or body is None else json.dumps(body)
    response = handler(proxy_event(method, path, headers or {}, raw), context)
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
        (BODY | {"command": ["python", "\ud800"]}, "command"),
        (BODY | {"image": "x" * 256}, "image"),
    ],
)
def test_bad_job_bodies_get_a_400_that_names_the_field(
    deployment: Deployment, context: Any, body: Any, field: str
) -> None:
    status, error = call(context, "POST", "/jobs", body)
    assert status == 400
    assert error["field"] == field
    assert error["message"]


def test_a_valid_job_is_accepted_recorded_and_its_workflow_started(deployment: Deployment, context: Any) -> None:
    status, submitted = call(context, "POST", "/jobs", BODY)
    execution = boto3.client("stepfunctions").describe_execution(executionArn=submitted["execution_arn"])
    workflow_input = json.loads(execution["input"])
    _, job = call(context, "GET", f"/jobs/{submitted['job_id']}")
    assert status == 202
    assert submitted["status"] == "SUBMITTED"
    assert execution["name"] == submitted["job_id"]
    assert workflow_input["timeouts"] == {"stuck_after_seconds": 900, "finish_after_seconds": 3 * (3600 + 600)}
    assert job["request"]["gpus"] == 1
    assert job["timeline"][0]["status"] == "SUBMITTED"


def test_the_same_idempotency_key_and_body_return_the_same_job(deployment: Deployment, context: Any) -> None:
    headers = {"Idempotency-Key": "retry-me"}
    _, first = call(context, "POST", "/jobs", BODY, headers)
    _, second = call(context, "POST", "/jobs", BODY, headers)
    _, listed = call(context, "GET", "/jobs")
    assert second["job_id"] == first["job_id"]
    assert len(listed["jobs"]) == 1


def test_an_idempotency_key_reused_with_another_body_is_a_409(deployment: Deployment, context: Any) -> None:
    headers = {"Idempotency-Key": "retry-me"}
    call(context, "POST", "/jobs", BODY, headers)
    status, error = call(context, "POST", "/jobs", BODY | {"gpus": 2}, headers)
    assert status == 409
    assert error["field"] == "Idempotency-Key"


def test_an_unknown_job_is_a_404(deployment: Deployment, context: Any) -> None:
    status, error = call(context, "GET", "/jobs/doesnotexist")
    assert status == 404
    assert error["field"] == "job_id"


@pytest.mark.parametrize(
    ("query", "field"),
    [("limit=0", "limit"), ("limit=abc", "limit"), ("status=DONE", "status"), ("next_token=x", "next_token")],
)
def test_bad_list_parameters_get_a_400_naming_them(
    deployment: Deployment, context: Any, query: str, field: str
) -> None:
    status, error = call(context, "GET", f"/jobs?{query}")
    assert status == 400
    assert error["field"] == field


def test_cancelling_stops_the_job_and_cancelling_again_is_a_409(deployment: Deployment, context: Any) -> None:
    _, submitted = call(context, "POST", "/jobs", BODY)
    status, cancelled = call(context, "DELETE", f"/jobs/{submitted['job_id']}")
    again, error = call(context, "DELETE", f"/jobs/{submitted['job_id']}")
    execution = boto3.client("stepfunctions").describe_execution(executionArn=submitted["execution_arn"])
    assert status == 202
    assert cancelled["status"] == "CANCELLED"
    assert execution["status"] == "ABORTED"
    assert again == 409 and error["error"] == "JobAlreadyFinished"


def test_plan_ranks_candidates_and_explains_rejections(deployment: Deployment, context: Any) -> None:
    status, plan = call(context, "POST", "/plan", BODY | {"gpus": 4, "gpu_models": ["A10G", "L4"]})
    first = plan["candidates"][0]
    rejected = {r["instance_type"]: r["reason"] for r in plan["rejected"]}
    assert status == 200
    assert first["gpu_model"] == "A10G" and first["gpus"] >= 4
    assert all(c["gpu_model"] in ("A10G", "L4") for c in plan["candidates"])
    assert "1 GPU(s), request needs 4" in rejected["g5.xlarge"]
    assert rejected["g5g.xlarge"].startswith("arm64 instance")


def test_costs_with_a_bad_date_name_the_parameter(deployment: Deployment, context: Any) -> None:
    status, error = call(context, "GET", "/costs?from=yesterday")
    assert status == 400 and error["field"] == "from"


def test_health_before_any_sweep_is_empty_and_a_sweep_answers_a_report(deployment: Deployment, context: Any) -> None:
    _, before = call(context, "GET", "/health")
    status, swept = call(context, "POST", "/sweep")
    _, after = call(context, "GET", "/health")
    assert before["swept_at"] is None
    assert status == 200 and swept["swept_at"]
    assert after["swept_at"] == swept["swept_at"]


def test_a_status_filtered_page_is_filled_across_dynamodb_pages(deployment: Deployment, context: Any) -> None:
    # Given one FAILED job under newer ones
    from functions.shared.models import JobStatus
    from functions.shared.store import JobStore

    store = JobStore(boto3.client("dynamodb"), deployment.table_name)
    store.create_job("failed000001", "old", BODY)
    store.finish("failed000001", JobStatus.FAILED)
    for index in range(3):
        store.create_job(f"newer00000{index}", "new", BODY)
    # When listing FAILED jobs one at a time
    status, page = call(context, "GET", "/jobs?status=FAILED&limit=1")
    # Then the page holds the FAILED job, not an empty page with a token
    assert status == 200
    assert [job["job_id"] for job in page["jobs"]] == ["failed000001"]


def test_every_route_of_the_contract_is_served_by_the_handler(deployment: Deployment, context: Any) -> None:
    from functions.shared.api_contract import ROUTES

    for route in ROUTES:
        path = route.path.replace("{job_id}", "nosuchjob")
        status, body = call(context, route.method, path, BODY if route.json_body else None)
        # Powertools' own "route not found" has no `error`; ours always names what went wrong.
        assert status in (route.status, *route.errors), (route.method, path, status, body)
        assert status < 400 or "error" in body, (route.method, path, body)
