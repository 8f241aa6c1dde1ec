"""AWS Step Functions: the GpuJob workflow's executions and task tokens.

IAM: StartExecution on the state machine; StopExecution and DescribeExecution on its executions;
SendTaskSuccess/Failure/Heartbeat are authorized against the state machine that issued the token.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from functions.shared.adapters.base import ClientAdapter

# What this module's calls are authorized against (the IAM drift check holds it to that); StartExecution
# also authorizes DescribeExecution on the new execution.
IAM_ACTIONS = ("states:StartExecution", "states:DescribeExecution", "states:StopExecution", "states:SendTaskSuccess")
# A token that can no longer be answered: resumed before, timed out, or its execution ended.
SPENT_TOKEN_ERRORS = frozenset({"TaskTimedOut", "InvalidToken", "TaskDoesNotExist"})


class StepFunctionsWorkflow(ClientAdapter):
    """Implements ports.Workflow."""

    service = "stepfunctions"

    def __init__(self, state_machine_arn: str, sfn: Any | None = None) -> None:
        super().__init__(sfn)
        self._state_machine_arn = state_machine_arn

    def start_execution(self, name: str, execution_input: str) -> str:
        """The execution named `name`, started once: a second start of that name finds the first (Step Functions
        answers an identical start of an open execution with it, and any other with ExecutionAlreadyExists)."""
        try:
            response = self._aws.start_execution(
                stateMachineArn=self._state_machine_arn, name=name, input=execution_input
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ExecutionAlreadyExists":
                raise
            return self._state_machine_arn.replace(":stateMachine:", ":execution:") + f":{name}"
        return str(response["executionArn"])

    def stop_execution(self, execution_arn: str, error: str, cause: str) -> None:
        try:
            self._aws.stop_execution(executionArn=execution_arn, error=error, cause=cause)
        except ClientError as failure:
            # An execution that is gone (expired from history, or never started) is as stopped as it gets.
            if failure.response.get("Error", {}).get("Code") != "ExecutionDoesNotExist":
                raise

    def send_task_success(self, token: str, output: str) -> bool:
        try:
            self._aws.send_task_success(taskToken=token, output=output)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") not in SPENT_TOKEN_ERRORS:
                raise
            return False
        return True
