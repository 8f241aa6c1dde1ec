"""POST /jobs with an Idempotency-Key: Powertools idempotency on the job table (same key and body, same job)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.serialization.pydantic import PydanticSerializer

from functions.shared import constants as c
from functions.shared.adapters.clients import client
from functions.shared.domain.requests import JobRequest
from functions.shared.domain.views import SubmitResponse

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
IDEMPOTENCY_TTL_SECONDS = 24 * 3600
IN_PROGRESS_RETRY_SECONDS = 2


@cache
def idempotency_config() -> IdempotencyConfig:
    return IdempotencyConfig(
        event_key_jmespath="idempotency_key",
        payload_validation_jmespath="request",
        expires_after_seconds=IDEMPOTENCY_TTL_SECONDS,
    )


@cache
def _persistence(table_name: str) -> DynamoDBPersistenceLayer:
    return DynamoDBPersistenceLayer(
        table_name=table_name,
        key_attr=c.TABLE_PK,
        sort_key_attr=c.TABLE_SK,
        static_pk_value="IDEMPOTENCY#submit_job",
        expiry_attr=c.TTL_ATTRIBUTE,
        boto3_client=client("dynamodb"),
    )


def submit_idempotently(
    table_name: str, start: Callable[[JobRequest], SubmitResponse], request: JobRequest, key: str
) -> SubmitResponse:
    """`start(request)` once per (key, body) for 24 h; Powertools raises on a reused key with another body
    (IdempotencyValidationError) and while the first call is still running (IdempotencyAlreadyInProgressError)."""

    @idempotent_function(
        data_keyword_argument="submission",
        persistence_store=_persistence(table_name),
        config=idempotency_config(),
        output_serializer=PydanticSerializer(SubmitResponse),
        key_prefix="submit_job",
    )
    def run(submission: dict[str, Any]) -> SubmitResponse:
        return start(JobRequest.model_validate(submission["request"]))

    return run(submission={"idempotency_key": key, "request": request.model_dump(mode="json")})  # type: ignore[no-any-return]
