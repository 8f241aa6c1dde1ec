"""HTTP API: thin routes over the use cases; domain errors map to 4xx JSON bodies naming the field.

The routes live by resource beside it (jobs, account), reading the request through resolver; how answers and
refusals are rendered is functions.shared.api.responses. This module registers each route of the contract with
its guard and audit line, and is the Lambda's entry point."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from functions.api import account, jobs
from functions.api.resolver import CONTROL_CHARACTER, _ports, app
from functions.shared.adapters.wiring import live_ports
from functions.shared.api.contract import ROUTES
from functions.shared.api.responses import answer_refusals, json_response
from functions.shared.api.routes import Route
from functions.shared.coldstart import ends_cold_start
from functions.shared.domain.core.errors import (
    BudgetExceeded,
    Forbidden,
)
from functions.shared.domain.core.vocabulary import Action, AuditOutcome
from functions.shared.domain.jobs.views import ErrorBody
from functions.shared.domain.teams.access import CHANGES
from functions.shared.domain.teams.identity import Caller
from functions.shared.observability import logger, metrics
from functions.shared.ports import Ports
from functions.shared.usecases.teams import audit, callers

answer_refusals(app)

OPERATIONS: dict[str, Callable[..., BaseModel | Response]] = {
    "submit_job": jobs.submit_job,
    "list_jobs": jobs.list_jobs,
    "get_job": jobs.get_job,
    "cancel_job": jobs.cancel_job,
    "job_logs": jobs.job_logs,
    "plan": account.plan,
    "health": account.health,
    "sweep": account.start_sweep,
    "costs": account.costs_report,
    "list_reservations": account.list_reservations,
    "list_block_offerings": account.list_block_offerings,
    "purchase_block": account.purchase_block,
    "whoami": account.whoami,
    "list_teams": account.teams,
    "audit": account.audit_log,
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
        return answer if isinstance(answer, Response) else json_response(route.status, answer)

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
