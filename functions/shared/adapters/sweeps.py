"""Starting a health sweep in the health_sweep function: an asynchronous (Event) Lambda invoke.

IAM: lambda:InvokeFunction on that function.
"""

from __future__ import annotations

import json
from typing import Any

from functions.shared.adapters.base import ClientAdapter

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("lambda:InvokeFunction",)


class LambdaSweeps(ClientAdapter):
    """Implements ports.Sweeps."""

    service = "lambda"

    def __init__(self, function_name: str, awslambda: Any | None = None) -> None:
        super().__init__(awslambda)
        self._function_name = function_name

    def start_sweep(self, sweep_id: str) -> None:
        self._aws.invoke(
            FunctionName=self._function_name,
            InvocationType="Event",
            Payload=json.dumps({"sweep_id": sweep_id}).encode(),
        )
