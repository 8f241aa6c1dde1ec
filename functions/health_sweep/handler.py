"""Scheduled health sweep (EventBridge, every 5 minutes)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.shared import service
from functions.shared.observability import logger, metrics


@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return service.run_sweep().model_dump(mode="json")
