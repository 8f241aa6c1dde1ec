"""DiagnoseStuckJob: why is the job still RUNNABLE, and what to do about it."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.shared.adapters.transient import retry_transient
from functions.shared.adapters.wiring import live_ports
from functions.shared.coldstart import ends_cold_start
from functions.shared.domain.jobs.steps import DiagnoseInput
from functions.shared.observability import logger, metrics
from functions.shared.ports import Ports
from functions.shared.usecases.diagnosis.diagnose import diagnose_stuck_job


@ends_cold_start
@metrics.log_metrics
@logger.inject_lambda_context(clear_state=True)
@retry_transient
def handler(event: dict[str, Any], context: LambdaContext, ports: Ports | None = None) -> Any:
    result = diagnose_stuck_job(DiagnoseInput.model_validate(event), ports or live_ports())
    return result.model_dump(mode="json")
