"""POST /jobs with an Idempotency-Key: Powertools idempotency on the job table (same key and body, same job).

Powertools' idempotency utility is imported on the first keyed submit, not with the api handler: importing it
costs about a third of the handler's cold start, and most requests (reads, unkeyed submits) never use it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

from functions.shared import constants as c
from functions.shared.adapters.clients import client
from functions.shared.domain.core.errors import IdempotencyInProgress, IdempotencyKeyReused
from functions.shared.domain.jobs.views import SubmitResponse
from functions.shared.domain.requests.job_request import JobRequest

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, IdempotencyConfig

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
IN_PROGRESS_RETRY_SECONDS = 2


@cache
def idempotency_config() -> IdempotencyConfig:
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig

    return IdempotencyConfig(
        event_key_jmespath="idempotency_key",
        payload_validation_jmespath="request",
        expires_after_seconds=c.IDEMPOTENCY_WINDOW_SECONDS,
    )


@cache
def _persistence(table_name: str) -> DynamoDBPersistenceLayer:
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    return DynamoDBPersistenceLayer(
        table_name=table_name,
        key_attr=c.TABLE_PK,
        sort_key_attr=c.TABLE_SK,
        static_pk_value="IDEMPOTENCY#submit_job",
        expiry_attr=c.TTL_ATTRIBUTE,
        boto3_client=client("dynamodb"),
    )


def submit_idempotently(
    table_name: str,
    start: Callable[[JobRequest], SubmitResponse],
    request: JobRequest,
    key: str,
    context: Any = None,
) -> SubmitResponse:
    """`start(request)` once per (key, body) for 24 h; IdempotencyKeyReused for a reused key with another body,
    IdempotencyInProgress while the first call is still running. `context`: the Lambda context, which bounds
    how long a call in progress holds its key."""
    from aws_lambda_powertools.utilities.idempotency import idempotent_function
    from aws_lambda_powertools.utilities.idempotency.exceptions import (
        IdempotencyAlreadyInProgressError,
        IdempotencyValidationError,
    )
    from aws_lambda_powertools.utilities.idempotency.serialization.pydantic import PydanticSerializer

    if context is not None:
        idempotency_config().register_lambda_context(context)

    @idempotent_function(
        data_keyword_argument="submission",
        persistence_store=_persistence(table_name),
        config=idempotency_config(),
        output_serializer=PydanticSerializer(SubmitResponse),
        key_prefix="submit_job",
    )
    def run(submission: dict[str, Any]) -> SubmitResponse:
        return start(JobRequest.model_validate(submission["request"]))

    try:
        return run(submission={"idempotency_key": key, "request": request.model_dump(mode="json")})  # type: ignore[no-any-return]
    except IdempotencyValidationError as error:
        raise IdempotencyKeyReused(key) from error
    except IdempotencyAlreadyInProgressError as error:
        raise IdempotencyInProgress(key) from error
