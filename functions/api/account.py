"""The API's account routes: the plan, costs, health and sweeps, reservations and Capacity Block offerings, who
calls, the teams and the audit log."""

from __future__ import annotations

from types import ModuleType

from aws_lambda_powertools.event_handler import Response
from pydantic import BaseModel

from functions.api.resolver import (
    COSTS_WINDOW_DAYS,
    SWEEP_ID,
    _caller,
    _date_param,
    _days_before,
    _json_object,
    _ports,
    _request_body,
    _whole,
    app,
)
from functions.shared.api.responses import BadRequest
from functions.shared.domain.core import clock
from functions.shared.domain.reservations.offerings import MAX_BLOCK_INSTANCES, block_days_problem
from functions.shared.domain.reservations.views import PurchaseRequest
from functions.shared.usecases.capacity import select
from functions.shared.usecases.reservations import account as reservations
from functions.shared.usecases.teams import audit
from functions.shared.usecases.teams.views import list_teams


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
