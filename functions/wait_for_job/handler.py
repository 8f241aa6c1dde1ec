"""WaitForJobToStart / WaitForJobToFinish: park the task token (see functions/shared/waits.py)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.shared import service
from functions.shared.errors import retry_transient
from functions.shared.observability import logger
from functions.shared.workflow import WaitInput


@logger.inject_lambda_context(clear_state=True)
@retry_transient
def handler(event: dict[str, Any], context: LambdaContext) -> Any:
    result = service.park_wait(WaitInput.model_validate(event))
    return {"resumed": result}
