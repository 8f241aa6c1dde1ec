"""HTTP API: thin routes over functions.shared.service; domain errors map to 4xx JSON bodies."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ValidationError

from functions.shared import service
from functions.shared.api_contract import ROUTES, Route
from functions.shared.models import ErrorBody, JobRequest, JobStatus
from functions.shared.observability import logger, metrics
from functions.shared.store import InvalidPageToken, JobNotFound

app = APIGatewayRestResolver()
MAX_PAGE = 100


class BadRequest(Exception):
    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _json(status: int, body: BaseModel) -> Response:
    return Response(
        status_code=status, content_type=content_types.APPLICATION_JSON, body=body.model_dump_json(by_alias=True)
    )


def _error(status: int, error: str, message: str, field: str | None = None) -> Response:
    return _json(status, ErrorBody(error=error, field=field, message=message))


def _request_body() -> JobRequest:
    raw = app.current_event.body
    if not raw:
        raise BadRequest("body", "a JSON object body is required")
    try:
        body = json.loads(raw)
    except ValueError as error:
        raise BadRequest("body", f"body is not valid JSON: {error}") from error
    if not isinstance(body, dict):
        raise BadRequest("body", "body must be a JSON object")
    return JobRequest.model_validate(body)


@app.exception_handler(ValidationError)
def _invalid(error: ValidationError) -> Response:
    first = error.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "body"
    return _error(400, "ValidationError", f"{field}: {first['msg']}", field)


@app.exception_handler(BadRequest)
def _bad_request(error: BadRequest) -> Response:
    return _error(400, "BadRequest", error.message, error.field)


@app.exception_handler(JobNotFound)
def _not_found(error: JobNotFound) -> Response:
    return _error(404, "JobNotFound", f"no job {error}", "job_id")


@app.exception_handler(InvalidPageToken)
def _bad_token(error: InvalidPageToken) -> Response:
    return _error(400, "BadRequest", "next_token is not one this API issued", "next_token")


@app.exception_handler(service.JobAlreadyFinished)
def _finished(error: service.JobAlreadyFinished) -> Response:
    return _error(409, "JobAlreadyFinished", f"job {error} has already finished", "job_id")


@app.exception_handler(IdempotencyValidationError)
def _key_reused(error: IdempotencyValidationError) -> Response:
    return _error(409, "IdempotencyKeyReused", "this Idempotency-Key was used with a different body", "Idempotency-Key")


@app.exception_handler(IdempotencyAlreadyInProgressError)
def _key_in_flight(error: IdempotencyAlreadyInProgressError) -> Response:
    return _error(
        409, "IdempotencyKeyInProgress", "a request with this Idempotency-Key is in progress", "Idempotency-Key"
    )


# -- operations: one per route of functions/shared/api_contract.py, each answering its response model ---
def submit_job() -> BaseModel:
    key = app.current_event.headers.get("Idempotency-Key")  # Powertools headers are case-insensitive
    request = _request_body()
    if key is not None and not (1 <= len(key) <= 256):
        raise BadRequest("Idempotency-Key", "Idempotency-Key must be 1-256 characters")
    return service.submit_idempotently(request, key) if key else service.start_job(request)


def get_job(job_id: str) -> BaseModel:
    return service.get_job(job_id)


def cancel_job(job_id: str) -> BaseModel:
    return service.cancel_job(job_id)


def list_jobs() -> BaseModel:
    status = app.current_event.get_query_string_value("status")
    if status is not None and status not in JobStatus.__members__:
        raise BadRequest("status", f"status must be one of {', '.join(JobStatus.__members__)}")
    raw_limit = app.current_event.get_query_string_value("limit") or "20"
    if not (raw_limit.isascii() and raw_limit.isdecimal()) or not 1 <= int(raw_limit) <= MAX_PAGE:
        raise BadRequest("limit", f"limit must be a whole number from 1 to {MAX_PAGE}")
    token = app.current_event.get_query_string_value("next_token")
    return service.list_jobs(status, int(raw_limit), token)


def plan() -> BaseModel:
    ranked, _ = service.plan_request(_request_body())
    return ranked


def costs() -> BaseModel:
    today = datetime.now(UTC).date()
    date_from = _date_param("from", (today - timedelta(days=30)).isoformat())
    date_to = _date_param("to", today.isoformat())
    if date_from > date_to:
        raise BadRequest("from", "from must not be after to")
    return service.cost_report(date_from, date_to)


def _date_param(name: str, default: str) -> str:
    value = app.current_event.get_query_string_value(name) or default
    try:
        return date.fromisoformat(value).isoformat()
    except ValueError as error:
        raise BadRequest(name, f"{name} must be a date, YYYY-MM-DD") from error


def health() -> BaseModel:
    return service.latest_health()


def sweep() -> BaseModel:
    return service.run_sweep()


OPERATIONS: dict[str, Callable[..., BaseModel]] = {
    "submit_job": submit_job,
    "list_jobs": list_jobs,
    "get_job": get_job,
    "cancel_job": cancel_job,
    "plan": plan,
    "health": health,
    "sweep": sweep,
    "costs": costs,
}


def _register(route: Route) -> None:
    operation = OPERATIONS[route.operation_id]

    def endpoint(**path_params: str) -> Response:
        return _json(route.status, operation(**path_params))

    app.route(route.resolver_path, method=route.method)(endpoint)


for _route in ROUTES:
    _register(_route)


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    service.idempotency_config().register_lambda_context(context)
    return app.resolve(event, context)
