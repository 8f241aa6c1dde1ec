"""SubmitBatchJob: register the GPU job definition and submit the attempt."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.shared.adapters.transient import retry_transient
from functions.shared.adapters.wiring import live_ports
from functions.shared.coldstart import ends_cold_start
from functions.shared.domain.jobs.steps import SubmitInput
from functions.shared.observability import logger
from functions.shared.ports import Ports
from functions.shared.usecases.jobs.attempt import submit_batch_job


@ends_cold_start
@logger.inject_lambda_context(clear_state=True)
@retry_transient
def handler(event: dict[str, Any], context: LambdaContext, ports: Ports | None = None) -> Any:
    result = submit_batch_job(SubmitInput.model_validate(event), ports or live_ports())
    return result.model_dump(mode="json")
