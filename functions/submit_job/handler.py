"""SubmitBatchJob: register the GPU job definition and submit the attempt."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.shared import service
from functions.shared.errors import retry_transient
from functions.shared.observability import logger
from functions.shared.workflow import SubmitInput


@logger.inject_lambda_context(clear_state=True)
@retry_transient
def handler(event: dict[str, Any], context: LambdaContext) -> Any:
    result = service.submit_batch_job(SubmitInput.model_validate(event))
    return result.model_dump(mode="json")
