"""RecordFailure: record why the workflow failed."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.shared import service
from functions.shared.errors import retry_transient
from functions.shared.observability import logger, metrics
from functions.shared.workflow import RecordFailureInput


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
@retry_transient
def handler(event: dict[str, Any], context: LambdaContext) -> Any:
    result = service.record_failure(RecordFailureInput.model_validate(event))
    return result
