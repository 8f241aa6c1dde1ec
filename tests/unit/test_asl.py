"""The GpuJob ASL and the handlers' input models must agree: every field a handler reads is passed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from functions.shared.constants import ASL_FILE, LAMBDAS
from functions.shared.workflow import (
    DiagnoseInput,
    EnsureQueueInput,
    RecordCostInput,
    RecordFailureInput,
    SelectInput,
    SubmitInput,
    WaitInput,
)

ASL = json.loads((Path(__file__).resolve().parents[2] / ASL_FILE).read_text())
INPUT_MODELS: dict[str, type[BaseModel]] = {
    "SelectGpuTypeFunctionArn": SelectInput,
    "EnsureJobQueueFunctionArn": EnsureQueueInput,
    "SubmitBatchJobFunctionArn": SubmitInput,
    "WaitForJobFunctionArn": WaitInput,
    "DiagnoseStuckJobFunctionArn": DiagnoseInput,
    "RecordCostFunctionArn": RecordCostInput,
    "RecordFailureFunctionArn": RecordFailureInput,
}


def _lambda_tasks() -> list[tuple[str, str, dict[str, object]]]:
    """(state, substitution, parameters the Lambda receives) for each Task that calls one of ours."""
    tasks = []
    for name, state in ASL["States"].items():
        if state["Type"] != "Task":
            continue
        resource = state["Resource"]
        if resource.endswith("waitForTaskToken"):
            function, payload = state["Parameters"]["FunctionName"], state["Parameters"]["Payload"]
        else:
            function, payload = resource, state["Parameters"]
        substitution = re.fullmatch(r"\$\{(\w+)\}", function)
        assert substitution, f"{name} calls {function}, not one of our functions"
        tasks.append((name, substitution.group(1), payload))
    return tasks


@pytest.mark.parametrize(("state", "substitution", "parameters"), _lambda_tasks())
def test_each_task_passes_exactly_the_fields_its_handler_reads(
    state: str, substitution: str, parameters: dict[str, object]
) -> None:
    passed = {key.removesuffix(".$") for key in parameters}
    expected = set(INPUT_MODELS[substitution].model_fields)
    assert passed == expected, f"{state}: passes {sorted(passed)}, its handler reads {sorted(expected)}"


def test_every_workflow_lambda_is_called_by_some_task() -> None:
    called = {substitution for _, substitution, _ in _lambda_tasks()}
    assert called == {spec.substitution for spec in LAMBDAS if spec.substitution}


def test_every_task_retries_lambda_faults_with_jitter_and_catches_into_record_failure() -> None:
    for name, state in ASL["States"].items():
        if state["Type"] != "Task":
            continue
        retried = {error for rule in state["Retry"] for error in rule["ErrorEquals"]}
        assert {"Lambda.ServiceException", "Lambda.TooManyRequestsException", "TransientAwsError"} <= retried, name
        assert all(rule.get("JitterStrategy") == "FULL" for rule in state["Retry"]), name
        assert state["Catch"][-1]["ErrorEquals"] == ["States.ALL"], name
        assert state["Catch"][-1]["Next"] in {"RecordFailure", "JobFailed"}, name


def test_waits_time_out_from_the_request_and_a_stuck_start_is_diagnosed() -> None:
    start, finish = ASL["States"]["WaitForJobToStart"], ASL["States"]["WaitForJobToFinish"]
    assert start["TimeoutSecondsPath"] == "$.timeouts.stuck_after_seconds"
    assert finish["TimeoutSecondsPath"] == "$.timeouts.finish_after_seconds"
    assert start["Catch"][0] == {"ErrorEquals": ["States.Timeout"], "ResultPath": "$.stuck", "Next": "DiagnoseStuckJob"}
