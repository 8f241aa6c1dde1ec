"""How the API answers: a response model as JSON, and every refusal (a domain error, a bad request, an unknown
route) as a 4xx JSON body naming the field."""

from __future__ import annotations

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from pydantic import BaseModel, ValidationError

from functions.shared.adapters.idempotency import IN_PROGRESS_RETRY_SECONDS
from functions.shared.api.refusals import validation_refusal
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
from functions.shared.domain.jobs.views import ErrorBody
from functions.shared.domain.teams.views import ForbiddenBody


class BadRequest(Exception):
    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class UnsupportedMediaType(Exception):
    """A body that is not JSON."""


def json_response(status: int, body: BaseModel, headers: dict[str, str] | None = None) -> Response:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=body.wire_json() if isinstance(body, ErrorBody) else body.model_dump_json(by_alias=True),
        headers=headers,
    )


def error_response(status: int, error: str, message: str, field: str | None = None, **headers: str) -> Response:
    return json_response(status, ErrorBody(error=error, field=field, message=message), headers or None)


def answer_refusals(app: APIGatewayRestResolver) -> None:
    """Every refusal `app` raises answered as its 4xx (or 5xx) JSON body, naming the field where there is one."""

    @app.exception_handler(ValidationError)
    def _invalid(error: ValidationError) -> Response:
        field, message = validation_refusal(error)
        return error_response(400, "ValidationError", message, field)

    @app.exception_handler(BadRequest)
    def _bad_request(error: BadRequest) -> Response:
        return error_response(400, "BadRequest", error.message, error.field)

    @app.exception_handler(UnsupportedMediaType)
    def _media_type(error: UnsupportedMediaType) -> Response:
        return error_response(
            415, "UnsupportedMediaType", f"the body must be application/json, not {error}", "Content-Type"
        )

    @app.exception_handler(RequestRefused)
    def _refused(error: RequestRefused) -> Response:
        return error_response(400, "RequestRefused", f"{error.field}: {error.message}", error.field)

    @app.exception_handler(NoCandidate)
    def _no_candidate(error: NoCandidate) -> Response:
        body = ErrorBody(
            error="NoCandidate",
            field=error.field,
            message=f"{error.headline}: {error.message}",
            rejected=error.rejected,
        )
        return json_response(400, body)

    @app.exception_handler(Forbidden)
    def _forbidden(error: Forbidden) -> Response:
        body = ForbiddenBody(message=error.message, principal=error.principal, role=error.role, action=error.action)
        return json_response(403, body)

    @app.exception_handler(BudgetExceeded)
    def _over_budget(error: BudgetExceeded) -> Response:
        return json_response(403, error.refusal)

    @app.exception_handler(PurchaseDisabled)
    def _purchase_disabled(error: PurchaseDisabled) -> Response:
        return error_response(
            403,
            "PurchaseDisabled",
            "this deployment does not buy Capacity Blocks: deploy it with the context max_capacity_block_upfront_usd "
            "(cdk.json: the most one block may cost up front), which also grants the api ec2:PurchaseCapacityBlock",
        )

    @app.exception_handler(PurchaseInProgress)
    def _purchase_in_progress(error: PurchaseInProgress) -> Response:
        return error_response(
            409, "PurchaseInProgress", f"{error} is being bought (or was) by another request", "offering_id"
        )

    @app.exception_handler(SignalUnavailable)
    def _ec2_unavailable(error: SignalUnavailable) -> Response:
        return error_response(503, "ServiceUnavailable", f"EC2 would not say ({error}): try again later")

    @app.not_found
    def _no_route(error: Exception) -> Response:
        # A path no route matches (a job id with characters no route takes, say): the error shape, not Powertools'.
        return error_response(404, "NotFound", f"no route {app.current_event.path}", "path")

    @app.exception_handler(JobNotFound)
    def _not_found(error: JobNotFound) -> Response:
        return error_response(404, "JobNotFound", f"no job {error}", "job_id")

    @app.exception_handler(SweepNotFound)
    def _sweep_not_found(error: SweepNotFound) -> Response:
        return error_response(404, "SweepNotFound", f"no health sweep {error}", "sweep_id")

    @app.exception_handler(AttemptNotFound)
    def _no_attempt(error: AttemptNotFound) -> Response:
        return error_response(404, "AttemptNotFound", str(error), "attempt")

    @app.exception_handler(InvalidPageToken)
    def _bad_token(error: InvalidPageToken) -> Response:
        return error_response(400, "BadRequest", "next_token is not one this API issued", "next_token")

    @app.exception_handler(JobAlreadyFinished)
    def _finished(error: JobAlreadyFinished) -> Response:
        return error_response(409, "JobAlreadyFinished", f"job {error} has already finished", "job_id")

    @app.exception_handler(IdempotencyKeyReused)
    def _key_reused(error: IdempotencyKeyReused) -> Response:
        return error_response(
            422, "IdempotencyKeyReused", "this Idempotency-Key was used with a different body", "Idempotency-Key"
        )

    @app.exception_handler(IdempotencyInProgress)
    def _key_in_flight(error: IdempotencyInProgress) -> Response:
        return error_response(
            409,
            "IN_PROGRESS",
            "a request with this Idempotency-Key is still in progress: retry after Retry-After seconds",
            "Idempotency-Key",
            **{"Retry-After": str(IN_PROGRESS_RETRY_SECONDS)},
        )
