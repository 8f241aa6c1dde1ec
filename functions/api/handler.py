"""HTTP API: thin routes over the use cases; domain errors map to 4xx JSON bodies naming the field."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date, timedelta
from types import ModuleType
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel, ValidationError

from functions.shared.adapters.idempotency import IN_PROGRESS_RETRY_SECONDS, submit_idempotently
from functions.shared.adapters.wiring import live_ports
from functions.shared.api.contract import ROUTES, SWEEP_ID_PATTERN
from functions.shared.api.refusals import MAX_INTEGER_DIGITS, NumberTooLong, read_json, validation_refusal
from functions.shared.api.routes import Route
from functions.shared.coldstart import ends_cold_start
from functions.shared.domain.core import clock
from functions.shared.domain.core.errors import (
    AttemptNotFound,
    BudgetExceeded,
    Forbidden,
    IdempotencyInProgress,
    IdempotencyKeyReused,
    InvalidPageToken,
    JobAlreadyFinished,
    JobNotFound,
    NoCandidate,
    PurchaseDisabled,
    PurchaseInProgress,
    RequestRefused,
    SignalUnavailable,
    SweepNotFound,
)
from functions.shared.domain.core.vocabulary import Action, AuditOutcome, JobStatus
from functions.shared.domain.jobs.views import ErrorBody, SubmitResponse
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.domain.reservations.offerings import MAX_BLOCK_INSTANCES, block_days_problem
from functions.shared.domain.reservations.views import PurchaseRequest
from functions.shared.domain.teams.access import CHANGES
from functions.shared.domain.teams.config import TEAM_NAME
from functions.shared.domain.teams.identity import Caller
from functions.shared.domain.teams.views import ForbiddenBody
from functions.shared.observability import logger, metrics
from functions.shared.ports import Ports
from functions.shared.usecases.capacity import select
from functions.shared.usecases.jobs import logs, queries, submit
from functions.shared.usecases.reservations import account as reservations
from functions.shared.usecases.teams import audit, callers
from functions.shared.usecases.teams.views import list_teams

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


class BadRequest(Exception):
    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class UnsupportedMediaType(Exception):
    """A body that is not JSON."""


def _ports() -> Ports:
    return app.context["ports"]  # type: ignore[no-any-return]


def _caller() -> Caller:
    """Who is calling, as the route's guard found it (every route has one)."""
    return app.context["caller"]  # type: ignore[no-any-return]


def _json(status: int, body: BaseModel, headers: dict[str, str] | None = None) -> Response:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=body.wire_json() if isinstance(body, ErrorBody) else body.model_dump_json(by_alias=True),
        headers=headers,
    )


def _error(status: int, error: str, message: str, field: str | None = None, **headers: str) -> Response:
    return _json(status, ErrorBody(error=error, field=field, message=message), headers or None)


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


@app.exception_handler(ValidationError)
def _invalid(error: ValidationError) -> Response:
    field, message = validation_refusal(error)
    return _error(400, "ValidationError", message, field)


@app.exception_handler(BadRequest)
def _bad_request(error: BadRequest) -> Response:
    return _error(400, "BadRequest", error.message, error.field)


@app.exception_handler(UnsupportedMediaType)
def _media_type(error: UnsupportedMediaType) -> Response:
    return _error(415, "UnsupportedMediaType", f"the body must be application/json, not {error}", "Content-Type")


@app.exception_handler(RequestRefused)
def _refused(error: RequestRefused) -> Response:
    return _error(400, "RequestRefused", f"{error.field}: {error.message}", error.field)


@app.exception_handler(NoCandidate)
def _no_candidate(error: NoCandidate) -> Response:
    body = ErrorBody(
        error="NoCandidate",
        field=error.field,
        message=f"{error.headline}: {error.message}",
        rejected=error.rejected,
    )
    return _json(400, body)


@app.exception_handler(Forbidden)
def _forbidden(error: Forbidden) -> Response:
    body = ForbiddenBody(message=error.message, principal=error.principal, role=error.role, action=error.action)
    return _json(403, body)


@app.exception_handler(BudgetExceeded)
def _over_budget(error: BudgetExceeded) -> Response:
    return _json(403, error.refusal)


@app.exception_handler(PurchaseDisabled)
def _purchase_disabled(error: PurchaseDisabled) -> Response:
    return _error(
        403,
        "PurchaseDisabled",
        "this deployment does not buy Capacity Blocks: deploy it with the context max_capacity_block_upfront_usd "
        "(cdk.json: the most one block may cost up front), which also grants the api ec2:PurchaseCapacityBlock",
    )


@app.exception_handler(PurchaseInProgress)
def _purchase_in_progress(error: PurchaseInProgress) -> Response:
    return _error(409, "PurchaseInProgress", f"{error} is being bought (or was) by another request", "offering_id")


@app.exception_handler(SignalUnavailable)
def _ec2_unavailable(error: SignalUnavailable) -> Response:
    return _error(503, "ServiceUnavailable", f"EC2 would not say ({error}): try again later")


@app.not_found
def _no_route(error: Exception) -> Response:
    # A path no route matches (a job id with characters no route takes, say): the error shape, not Powertools'.
    return _error(404, "NotFound", f"no route {app.current_event.path}", "path")


@app.exception_handler(JobNotFound)
def _not_found(error: JobNotFound) -> Response:
    return _error(404, "JobNotFound", f"no job {error}", "job_id")


@app.exception_handler(SweepNotFound)
def _sweep_not_found(error: SweepNotFound) -> Response:
    return _error(404, "SweepNotFound", f"no health sweep {error}", "sweep_id")


@app.exception_handler(AttemptNotFound)
def _no_attempt(error: AttemptNotFound) -> Response:
    return _error(404, "AttemptNotFound", str(error), "attempt")


@app.exception_handler(InvalidPageToken)
def _bad_token(error: InvalidPageToken) -> Response:
    return _error(400, "BadRequest", "next_token is not one this API issued", "next_token")


@app.exception_handler(JobAlreadyFinished)
def _finished(error: JobAlreadyFinished) -> Response:
    return _error(409, "JobAlreadyFinished", f"job {error} has already finished", "job_id")


@app.exception_handler(IdempotencyKeyReused)
def _key_reused(error: IdempotencyKeyReused) -> Response:
    return _error(422, "IdempotencyKeyReused", "this Idempotency-Key was used with a different body", "Idempotency-Key")


@app.exception_handler(IdempotencyInProgress)
def _key_in_flight(error: IdempotencyInProgress) -> Response:
    return _error(
        409,
        "IN_PROGRESS",
        "a request with this Idempotency-Key is still in progress: retry after Retry-After seconds",
        "Idempotency-Key",
        **{"Retry-After": str(IN_PROGRESS_RETRY_SECONDS)},
    )


# -- operations: one per route of functions/shared/api/contract.py, each answering its response model ---
def submit_job() -> BaseModel:
    key = app.current_event.headers.get("Idempotency-Key")  # Powertools headers are case-insensitive
    request = _request_body()
    if key is not None and not (1 <= len(key) <= 256):
        raise BadRequest("Idempotency-Key", "Idempotency-Key must be 1-256 characters")
    ports = _ports()

    started: list[SubmitResponse] = []

    def start(checked: JobRequest) -> SubmitResponse:
        started.append(submit.start_job(checked, ports, key=key, caller=_caller()))
        return started[-1]

    if not key:
        return start(request)
    answer = submit_idempotently(ports.settings.table_name, start, request, key, app.lambda_context)
    # Nothing started in this call: the key's first call did, and its answer is replayed.
    return answer if started else answer.model_copy(update={"already_submitted": True})


def get_job(job_id: str) -> BaseModel:
    explain = app.current_event.get_query_string_value("explain")
    if explain not in (None, "true", "false"):
        raise BadRequest("explain", "explain must be true or false")
    if explain == "true":
        return queries.explain_job(job_id, _ports(), _caller())
    return queries.get_job(job_id, _ports(), _caller())


def job_logs(job_id: str) -> BaseModel:
    raw_attempt = app.current_event.get_query_string_value("attempt")
    if raw_attempt is not None and not (raw_attempt.isascii() and raw_attempt.isdecimal() and raw_attempt.strip("0")):
        raise BadRequest("attempt", "attempt must be a whole number, 1 or more")
    if raw_attempt is not None and len(raw_attempt) > MAX_INTEGER_DIGITS:
        raise BadRequest("attempt", NumberTooLong("attempt", len(raw_attempt)).message)
    # Any other whole number is an attempt the job may not have: a 404 naming it, as the OpenAPI document allows.
    attempt = int(raw_attempt) if raw_attempt is not None else None
    token = app.current_event.get_query_string_value("next_token")
    if token is not None and not (1 <= len(token) <= MAX_LOG_TOKEN and token.isprintable()):
        raise BadRequest("next_token", "next_token is not one this API issued")
    return logs.job_logs(job_id, attempt, token, _ports(), _caller())


def cancel_job(job_id: str) -> BaseModel:
    return queries.cancel_job(job_id, _ports(), _caller())


def list_jobs() -> BaseModel:
    status = app.current_event.get_query_string_value("status")
    if status is not None and status not in JobStatus.__members__:
        raise BadRequest("status", f"status must be one of {', '.join(JobStatus.__members__)}")
    limit = _whole("limit", 20, 1, MAX_PAGE)
    token = app.current_event.get_query_string_value("next_token")
    return queries.list_jobs(JobStatus(status) if status else None, limit, token, _ports(), _listed_team())


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


def plan() -> BaseModel:
    return select.checked_plan(_request_body(), _ports())


def costs_report() -> BaseModel | Response:
    from functions.shared.usecases.cost import (
        report as costs,  # on first use, as the sweep's: most requests never read costs
    )

    # A window ends today unless `to` says otherwise, and spans the 30 days before its end unless `from` does.
    date_to = _date_param("to", clock.now().date().isoformat())
    date_from = _date_param("from", _days_before(date_to, COSTS_WINDOW_DAYS))
    if date_from > date_to:
        raise BadRequest("from", "from must not be after to")
    group_by = app.current_event.get_query_string_value("group_by")
    if group_by is not None and group_by not in costs.GROUPS:
        raise BadRequest("group_by", f"group_by must be one of {', '.join(costs.GROUPS)}")
    # Anyone but an admin reads its own team's costs only (and not the fleet's waste, which is no team's).
    team = None if _caller().admin else (_caller().team or "")
    if "text/csv" in (app.current_event.headers.get("Accept") or ""):
        csv_text = costs.cost_csv(date_from, date_to, _ports(), team)
        return Response(status_code=200, content_type="text/csv; charset=utf-8", body=csv_text)
    return costs.cost_report(date_from, date_to, _ports(), group_by, team)


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


def health() -> BaseModel:
    sweep_id = app.current_event.get_query_string_value("sweep_id")
    if sweep_id is not None and not SWEEP_ID.match(sweep_id):
        raise BadRequest("sweep_id", "sweep_id must be 1-64 printable ASCII characters")
    return _sweep().health(sweep_id, _ports())


def start_sweep() -> BaseModel:
    return _sweep().start_sweep(_ports())


def _sweep() -> ModuleType:
    """The sweep's use case, imported on first use: it reaches the fleet, the pools and the waste ledger, which only
    GET /health and POST /sweep need (a cold start that serves a submit or a read does not load them)."""
    from functions.shared.usecases.health import sweep

    return sweep


def list_reservations() -> BaseModel:
    return reservations.list_reservations(_ports())


def list_block_offerings() -> BaseModel:
    instance_type = app.current_event.get_query_string_value("instance_type")
    if not instance_type:
        raise BadRequest("instance_type", "instance_type is required, e.g. p5.48xlarge")
    count = _whole("count", 1, 1, MAX_BLOCK_INSTANCES)
    days = _whole("days", 1, 1, 10**6)
    problem = block_days_problem(days)
    if problem:
        raise BadRequest("days", f"days: {problem}")
    return reservations.block_offerings(instance_type, count, days, _ports())


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


def purchase_block() -> BaseModel:
    return reservations.purchase_block(PurchaseRequest.model_validate(_json_object()), _ports())


def whoami() -> BaseModel:
    return _caller()


def teams() -> BaseModel:
    return list_teams(_caller(), _ports())


def audit_log() -> BaseModel:
    last = _date_param("to", clock.now().date().isoformat())
    first = _date_param("from", last)
    if first > last:
        raise BadRequest("from", "from must not be after to")
    return audit.audit_events(first, last, _ports())


OPERATIONS: dict[str, Callable[..., BaseModel | Response]] = {
    "submit_job": submit_job,
    "list_jobs": list_jobs,
    "get_job": get_job,
    "cancel_job": cancel_job,
    "job_logs": job_logs,
    "plan": plan,
    "health": health,
    "sweep": start_sweep,
    "costs": costs_report,
    "list_reservations": list_reservations,
    "list_block_offerings": list_block_offerings,
    "purchase_block": purchase_block,
    "whoami": whoami,
    "list_teams": teams,
    "audit": audit_log,
}


def _register(route: Route) -> None:
    operation = OPERATIONS[route.operation_id]

    def endpoint(**path_params: str) -> Response:
        user_arn = app.current_event.request_context.identity.user_arn
        refused: AuditOutcome | None = None
        try:
            caller = callers.caller(user_arn, route.action, _ports())
            app.append_context(caller=caller)
            callers.allow(caller, route.action)
            answer = operation(**path_params)
        except Forbidden as error:
            refused, detail = AuditOutcome.FORBIDDEN, {"reason": error.message}
            raise
        except BudgetExceeded as error:
            refused, detail = AuditOutcome.BUDGET_EXCEEDED, error.refusal.model_dump(exclude={"error", "field"})
            raise
        finally:
            if refused is not None:
                who: Caller | str = app.context.get("caller") or user_arn or "unknown"
                _audit(who, route.action, refused, path_params.get("job_id"), detail)
        if route.action in CHANGES:
            _audit(caller, route.action, AuditOutcome.ALLOWED, _resource(answer, path_params), {})
        return answer if isinstance(answer, Response) else _json(route.status, answer)

    app.route(route.resolver_path, method=route.method)(endpoint)


def _resource(answer: BaseModel | Response, path_params: dict[str, str]) -> str | None:
    """What an audited action acted on: the job, the sweep, the reservation bought."""
    for name in ("job_id", "sweep_id", "reservation_id"):
        value = path_params.get(name) or getattr(answer, name, None)
        if value:
            return str(value)
    return None


def _audit(
    who: Caller | str, action: Action, outcome: AuditOutcome, resource: str | None, detail: dict[str, Any]
) -> None:
    """An audit line; a line that cannot be written is logged, never the caller's error (what it did is done)."""
    try:
        audit.record(
            who,
            action,
            outcome,
            _ports(),
            resource,
            detail | {"request_id": app.current_event.request_context.request_id},
        )
    except Exception:
        logger.exception("could not write the audit line", extra={"action": action.value, "outcome": outcome.value})


for _route in ROUTES:
    _register(_route)


@ends_cold_start
@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext, ports: Ports | None = None) -> dict[str, Any]:
    path = event.get("path")
    if isinstance(path, str) and CONTROL_CHARACTER.search(path):
        # Powertools matches routes with `$`, which also matches before a final newline: "/jobs/\n" would be
        # GET /jobs. No route has a control character; answered as any unknown path is.
        body = ErrorBody(error="NotFound", field="path", message="no route for a path with control characters")
        return {"statusCode": 404, "headers": {"Content-Type": "application/json"}, "body": body.wire_json()}
    app.append_context(ports=ports or live_ports())
    try:
        return app.resolve(event, context)
    finally:
        app.clear_context()
