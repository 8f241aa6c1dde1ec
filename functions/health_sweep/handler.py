"""Health sweep: on its EventBridge schedule, or started by POST /sweep (`{"sweep_id": ...}`, async)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.shared.adapters.wiring import live_ports
from functions.shared.coldstart import ends_cold_start
from functions.shared.observability import logger, metrics
from functions.shared.ports import Ports
from functions.shared.usecases.health.sweep import run_sweep


@ends_cold_start
@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: LambdaContext, ports: Ports | None = None) -> dict[str, Any]:
    sweep_id = event.get("sweep_id") if isinstance(event.get("sweep_id"), str) else None
    return run_sweep(sweep_id, ports or live_ports()).model_dump(mode="json")
