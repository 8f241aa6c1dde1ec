"""Batch job state changes (EventBridge): update the job record and resume the waiting workflow."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.shared import service
from functions.shared.observability import logger


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    if event.get("detail-type") != "Batch Job State Change":
        # Queue-blocked events are evidence for the sweep; state changes drive the workflow.
        logger.info("batch event noted", extra={"detail_type": event.get("detail-type")})
        return {"ignored": event.get("detail-type")}
    return service.handle_batch_event(event)
