"""The HTTP API's routes, in one table: the api handler registers them, the stack declares them in API
Gateway, and the OpenAPI document (docs/openapi.json) is written from them, so the three cannot drift."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from functions.shared.api_routes import QueryParam, Route
from functions.shared.domain.logs import JobLogs
from functions.shared.domain.requests import JobRequest
from functions.shared.domain.selection import Plan
from functions.shared.domain.views import (
    CostReport,
    ErrorBody,
    HealthReport,
    JobList,
    JobView,
    SubmitResponse,
    SweepStarted,
)
from functions.shared.domain.vocabulary import JobStatus

# A health sweep id: what POST /sweep returns, and what GET /health?sweep_id= takes.
SWEEP_ID_PATTERN = r"^[\x21-\x7e]{1,64}$"

API_TITLE = "GPU Pilot"
API_VERSION = "1"
# API Gateway's IAM authorization as OpenAPI spells it: requests signed with SigV4.
SIGV4 = {"type": "apiKey", "name": "Authorization", "in": "header", "x-amazon-apigateway-authtype": "awsSigv4"}


ROUTES: tuple[Route, ...] = (
    Route(
        "submit_job",
        "POST",
        "/jobs",
        "Submit a GPU job; it is picked a GPU type, provisioned, watched and priced",
        SubmitResponse,
        status=202,
        body=JobRequest,
        errors=(400, 409, 422),
        headers=(
            QueryParam(
                "Idempotency-Key",
                "The same key and body return the same job (24 h); 409 IN_PROGRESS with Retry-After while the "
                "first call runs; 422 for the same key with another body",
                {"type": "string", "minLength": 1, "maxLength": 256},
            ),
        ),
    ),
    Route(
        "list_jobs",
        "GET",
        "/jobs",
        "List jobs, newest first",
        JobList,
        query=(
            QueryParam("status", "Only jobs in this status", {"enum": [s.value for s in JobStatus]}),
            QueryParam("limit", "Page size, 1-100 (default 20)", {"type": "integer", "minimum": 1, "maximum": 100}),
            QueryParam("next_token", "The next_token of the previous page"),
        ),
    ),
    Route(
        "get_job",
        "GET",
        "/jobs/{job_id}",
        "A job: status, why it waits, attempts, timeline, cost",
        JobView,
        query=(
            QueryParam(
                "explain",
                "true: diagnose the job's wait now, from its pool's evidence",
                {"type": "string", "enum": ["true", "false"]},
            ),
        ),
        errors=(400, 404),
    ),
    Route(
        "cancel_job",
        "DELETE",
        "/jobs/{job_id}",
        "Cancel a job: stops its workflow and terminates its Batch job. The job is not removed: it stays readable, "
        "with status CANCELLED",
        JobView,
        status=202,
        errors=(404, 409),
    ),
    Route(
        "job_logs",
        "GET",
        "/jobs/{job_id}/logs",
        "What an attempt printed (its log stream), oldest first, a page at a time; the local cloud's are simulated",
        JobLogs,
        query=(
            QueryParam("attempt", "From 1 (default: the latest that ran)", {"type": "integer", "minimum": 1}),
            QueryParam("next_token", "The next_token of the previous page: the lines written since"),
        ),
        errors=(400, 404),
    ),
    Route("plan", "POST", "/plan", "Rank GPU offerings for a request; launches nothing", Plan, body=JobRequest),
    Route(
        "health",
        "GET",
        "/health",
        "The latest finished health sweep, or the one named by sweep_id (status RUNNING until it ends)",
        HealthReport,
        query=(
            QueryParam(
                "sweep_id",
                "A sweep started by POST /sweep",
                {"type": "string", "minLength": 1, "maxLength": 64, "pattern": SWEEP_ID_PATTERN},
            ),
        ),
        errors=(400, 404),
    ),
    Route(
        "sweep",
        "POST",
        "/sweep",
        "Start a health sweep in the sweep function; read it with GET /health?sweep_id=",
        SweepStarted,
        status=202,
        errors=(),
    ),
    Route(
        "costs",
        "GET",
        "/costs",
        "What every ended attempt cost: per day by GPU type, job name and capacity type, or by group_by; "
        "Accept: text/csv for one row per attempt",
        CostReport,
        query=(
            QueryParam(
                "from", "First day, YYYY-MM-DD (default: 30 days before `to`)", {"type": "string", "format": "date"}
            ),
            QueryParam("to", "Last day, YYYY-MM-DD (default: today)", {"type": "string", "format": "date"}),
            QueryParam(
                "group_by",
                "Group the total by",
                {"type": "string", "enum": ["day", "gpu_type", "job_name", "capacity_type"]},
            ),
        ),
        csv=True,
    ),
)


DEPLOYED_SERVER = {
    "url": "https://{api_id}.execute-api.{region}.amazonaws.com/prod",
    "description": "The deployed API: every operation needs a SigV4 signature (IAM authorization).",
    "variables": {"api_id": {"default": "api_id"}, "region": {"default": "us-east-1"}},
}
LOCAL_SERVER = {
    "url": "http://127.0.0.1:8765",
    "description": "The local cloud (`gpupilot serve`): the same routes and models, without SigV4 by design (it "
    "listens on the loopback interface only); its own document, `python -m gpupilot.openapi --local`, says so "
    "with no security requirement.",
}


def openapi_document(local: bool = False) -> dict[str, Any]:
    """OpenAPI 3.1 for the API, its schemas from the same pydantic models the handler validates with.

    `local`: the local cloud's document: its server only, and no security requirement (it has no SigV4)."""
    models = {route.response for route in ROUTES} | {r.body for r in ROUTES if r.body} | {ErrorBody}
    _, schemas = models_json_schema(
        [(model, "serialization") for model in sorted(models, key=lambda m: m.__name__)],
        ref_template="#/components/schemas/{model}",
    )
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        parameters = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in _path_params(route.path)
        ]
        parameters += [
            {"name": p.name, "in": "query", "required": False, "description": p.description, "schema": p.schema}
            for p in route.query
        ]
        parameters += [
            {"name": h.name, "in": "header", "required": False, "description": h.description, "schema": h.schema}
            for h in route.headers
        ]
        responses: dict[str, Any] = {str(route.status): _json_response(route.response, "Success")}
        if route.csv:
            responses[str(route.status)]["content"]["text/csv"] = {"schema": {"type": "string"}}
        for status in (*route.errors, *((415,) if route.body else ())):
            responses[str(status)] = _json_response(ErrorBody, "The request was refused; `field` names why")
        operation: dict[str, Any] = {
            "operationId": route.operation_id,
            "summary": route.summary,
            "security": [] if local else [{"sigv4": []}],
            "responses": responses,
        }
        if parameters:
            operation["parameters"] = parameters
        if route.body:
            operation["requestBody"] = {"required": True, "content": _json_content(route.body)}
        paths.setdefault(route.path, {})[route.method.lower()] = operation
    components: dict[str, Any] = {"schemas": schemas["$defs"]}
    if not local:
        components["securitySchemes"] = {
            "sigv4": {
                "type": "apiKey",
                "name": "Authorization",
                "in": "header",
                "x-amazon-apigateway-authtype": "awsSigv4",
            }
        }
    return {
        "openapi": "3.1.0",
        "info": {"title": API_TITLE, "version": API_VERSION},
        "servers": [LOCAL_SERVER] if local else [DEPLOYED_SERVER, LOCAL_SERVER],
        "paths": paths,
        "components": components,
    }


def _path_params(path: str) -> list[str]:
    return [part[1:-1] for part in path.split("/") if part.startswith("{")]


def _json_content(model: type[BaseModel]) -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{model.__name__}"}}}


def _json_response(model: type[BaseModel], description: str) -> dict[str, Any]:
    return {"description": description, "content": _json_content(model)}
