"""EnsureJobQueue: create or reuse the pooled GPU compute environment and queue."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.shared.adapters.transient import retry_transient
from functions.shared.adapters.wiring import live_ports
from functions.shared.coldstart import ends_cold_start
from functions.shared.domain.jobs.steps import EnsureQueueInput
from functions.shared.observability import logger, metrics
from functions.shared.ports import Ports
from functions.shared.usecases.pools.provision import ensure_job_queue


@ends_cold_start
@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
@retry_transient
def handler(event: dict[str, Any], context: LambdaContext, ports: Ports | None = None) -> Any:
    result = ensure_job_queue(EnsureQueueInput.model_validate(event), ports or live_ports())
    return result.model_dump(mode="json")
