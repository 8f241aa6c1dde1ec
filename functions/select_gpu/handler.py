"""SelectGpuType: rank the GPU offerings that fit the request."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.shared.adapters.transient import retry_transient
from functions.shared.adapters.wiring import live_ports
from functions.shared.coldstart import ends_cold_start
from functions.shared.domain.jobs.steps import SelectInput
from functions.shared.observability import logger
from functions.shared.ports import Ports
from functions.shared.usecases.capacity.select import select_gpu_type


@ends_cold_start
@logger.inject_lambda_context(clear_state=True)
@retry_transient
def handler(event: dict[str, Any], context: LambdaContext, ports: Ports | None = None) -> Any:
    result = select_gpu_type(SelectInput.model_validate(event), ports or live_ports())
    return result.model_dump(mode="json")
