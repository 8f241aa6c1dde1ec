"""The resolver the API's routes answer on, and what they read from its current request: the ports and the caller
the guard found, the JSON body, whole numbers and days of the query string (each bad one a BadRequest naming it)."""

from __future__ import annotations

import re
from datetime import date, timedelta
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver

from functions.shared.api.contract import SWEEP_ID_PATTERN
from functions.shared.api.refusals import NumberTooLong, read_json
from functions.shared.api.responses import BadRequest, UnsupportedMediaType
from functions.shared.domain.core.errors import (
    Forbidden,
)
from functions.shared.domain.core.vocabulary import Action
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.domain.teams.config import TEAM_NAME
from functions.shared.domain.teams.identity import Caller
from functions.shared.ports import Ports

app = APIGatewayRestResolver()
CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")
DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
SWEEP_ID = re.compile(SWEEP_ID_PATTERN)
TEAM = re.compile(TEAM_NAME)
MAX_PAGE = 100
# CloudWatch Logs' forward tokens are short (`f/` and 56 digits); a longer one is none it issued.
MAX_LOG_TOKEN = 512
# No whole number a query parameter takes has more digits (Python will not read one of more than 4300).
MAX_QUERY_DIGITS = 9
COSTS_WINDOW_DAYS = 30


def _ports() -> Ports:
    return app.context["ports"]  # type: ignore[no-any-return]


def _caller() -> Caller:
    """Who is calling, as the route's guard found it (every route has one)."""
    return app.context["caller"]  # type: ignore[no-any-return]


def _request_body() -> JobRequest:
    return JobRequest.model_validate(_json_object())


def _json_object() -> dict[str, Any]:
    """The request's body: a JSON object (415 when it is not JSON, 400 when it is not an object)."""
    raw = app.current_event.body
    content_type = (app.current_event.headers.get("Content-Type") or "").split(";")[0].strip()
    if content_type.lower() != "application/json":
        raise UnsupportedMediaType(content_type or "none")
    if not raw:
        raise BadRequest("body", "a JSON object body is required")
    try:
        body = read_json(raw)
    except NumberTooLong as error:
        raise BadRequest(error.field, error.message) from error
    except ValueError as error:
        raise BadRequest("body", f"body is not valid JSON: {error}") from error
    except RecursionError as error:
        raise BadRequest("body", "body nests too deeply to be a job request") from error
    if not isinstance(body, dict):
        raise BadRequest("body", "body must be a JSON object")
    return body


def _listed_team() -> str | None:
    """The team GET /jobs lists: `?team=` for an admin (none: every team), the caller's own for anyone else."""
    team = app.current_event.get_query_string_value("team")
    if team is not None and not TEAM.match(team):
        raise BadRequest("team", "team must be a team's name: 1-32 of a-z, 0-9 and '-'")
    caller = _caller()
    if caller.admin:
        return team
    if team is not None and team != caller.team:
        raise Forbidden(
            f"{caller.principal} is a {caller.role.value} of team {caller.team}: it lists only its own team's jobs",
            principal=caller.principal,
            role=caller.role.value,
            action=Action.READ.value,
        )
    return caller.team or ""


def _days_before(day: str, days: int) -> str:
    """The day `days` before `day` (YYYY-MM-DD), or the first day there is."""
    try:
        return (date.fromisoformat(day) - timedelta(days=days)).isoformat()
    except OverflowError:
        return date.min.isoformat()


def _date_param(name: str, default: str) -> str:
    """A YYYY-MM-DD day (absent: the default; empty or any other ISO 8601 spelling: refused, as the OpenAPI's
    `format: date` says)."""
    value = app.current_event.get_query_string_value(name)
    if value is None:
        return default
    try:
        if not DAY.match(value):
            raise ValueError(value)
        return date.fromisoformat(value).isoformat()
    except ValueError as error:
        raise BadRequest(name, f"{name} must be a date, YYYY-MM-DD") from error


def _whole(name: str, default: int, low: int, high: int) -> int:
    """A whole-number query parameter from `low` to `high`."""
    raw = app.current_event.get_query_string_value(name)
    number = default if raw is None else _digits(raw)  # `?limit=` (empty) is a bad value, not an absent one
    if number is None or not low <= number <= high:
        raise BadRequest(name, f"{name} must be a whole number from {low} to {high}")
    return number


def _digits(raw: str) -> int | None:
    """A whole number written in at most MAX_QUERY_DIGITS ASCII digits, else None."""
    return int(raw) if raw.isascii() and raw.isdecimal() and len(raw) <= MAX_QUERY_DIGITS else None
