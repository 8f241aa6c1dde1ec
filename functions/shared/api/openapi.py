"""The OpenAPI document of the HTTP API (docs/openapi.json), written from the route table (api/contract.py) and the
same pydantic models the api handler validates with."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from functions.shared.api.contract import API_TITLE, API_VERSION, ROUTES
from functions.shared.domain.jobs.views import ErrorBody

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

# Every route may refuse the caller (a deployment with teams, or a local cloud with identities).
FORBIDDEN = (
    "Refused: Forbidden (the caller is in no team, or its role does not allow the action: `principal`, `role`, "
    "`action` say which), BudgetExceeded (POST /jobs: the job's worst case does not fit its team's budget: `team`, "
    "`spent_usd`, `committed_usd`, `budget_usd`, `job_worst_case_usd`, `fits_with_timeout_minutes`), or, unsigned or "
    "badly signed, MissingAuthenticationToken or InvalidSignature"
)


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
            {"name": p.name, "in": "query", "required": p.required, "description": p.description, "schema": p.schema}
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
        if "403" not in responses:
            responses["403"] = _json_response(ErrorBody, FORBIDDEN)
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
