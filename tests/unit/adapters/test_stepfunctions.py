"""The Step Functions adapter: a token the other side already spent is not an error; anything else is."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from functions.shared.adapters.stepfunctions import StepFunctionsWorkflow


class FakeClient:
    """Refuses the tokens it is told to, with the given error code; records the rest."""

    def __init__(self, refuse: dict[str, str] | None = None) -> None:
        self.refuse = refuse or {}
        self.sent: list[dict[str, Any]] = []

    def send_task_success(self, taskToken: str, output: str) -> dict[str, Any]:
        if taskToken in self.refuse:
            raise ClientError({"Error": {"Code": self.refuse[taskToken], "Message": "refused"}}, "SendTaskSuccess")
        self.sent.append({"taskToken": taskToken, "output": output})
        return {}


def test_a_live_token_is_sent():
    client = FakeClient()
    assert StepFunctionsWorkflow("arn:sm", client).send_task_success("tok", "{}") is True
    assert client.sent == [{"taskToken": "tok", "output": "{}"}]


@pytest.mark.parametrize("code", ["TaskTimedOut", "InvalidToken", "TaskDoesNotExist"])
def test_a_token_already_spent_by_the_other_side_is_not_an_error(code):
    # Given Step Functions refusing the token because it was answered, timed out or its execution ended
    workflow = StepFunctionsWorkflow("arn:sm", FakeClient(refuse={"tok": code}))

    # When / Then: no error, and not reported as sent
    assert workflow.send_task_success("tok", "{}") is False


def test_other_step_functions_errors_are_raised_for_the_callers_retry():
    # Given Step Functions throttling the call
    workflow = StepFunctionsWorkflow("arn:sm", FakeClient(refuse={"tok": "ThrottlingException"}))

    # When / Then
    with pytest.raises(ClientError) as raised:
        workflow.send_task_success("tok", "{}")
    assert raised.value.response["Error"]["Code"] == "ThrottlingException"
