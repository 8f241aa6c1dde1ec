"""The GpuJob ASL and the handlers' input models must agree: every field a handler reads is passed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic import BaseModel

from functions.shared.constants import ASL_FILE, LAMBDAS
from functions.shared.domain.jobs.steps import (
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


# The Retry policy every Task shares (the ASL keeps it as JSON, copied, so the console shows it).
SHARED_RETRY = [
    {
        "ErrorEquals": [
            "Lambda.ServiceException",
            "Lambda.AWSLambdaException",
            "Lambda.SdkClientException",
            "Lambda.TooManyRequestsException",
        ],
        "IntervalSeconds": 1,
        "MaxAttempts": 3,
        "BackoffRate": 2,
        "JitterStrategy": "FULL",
    },
    {
        "ErrorEquals": ["TransientAwsError"],
        "IntervalSeconds": 2,
        "MaxAttempts": 4,
        "BackoffRate": 2,
        "JitterStrategy": "FULL",
    },
]
TASKS = [name for name, state in ASL["States"].items() if state["Type"] == "Task"]


@pytest.mark.parametrize("state", TASKS)
def test_every_task_has_the_shared_retry_policy_and_catches_everything_into_record_failure(state: str) -> None:
    task = ASL["States"][state]
    assert task["Retry"] == SHARED_RETRY, state
    assert task["Catch"][-1]["ErrorEquals"] == ["States.ALL"], state
    expected = "JobFailed" if state == "RecordFailure" else "RecordFailure"
    assert task["Catch"][-1]["Next"] == expected, state


def test_no_arn_in_the_asl_names_a_partition_the_stack_did_not_substitute() -> None:
    # Given the ASL as text / When looking for literal partitions / Then every ARN takes ${Partition}
    text = json.dumps(ASL)
    assert "arn:aws:" not in text and "arn:aws-" not in text
    assert text.count("arn:${Partition}:states:::lambda:invoke.waitForTaskToken") == 2


def test_an_invalid_pool_falls_back_or_gives_up_and_a_new_one_is_polled() -> None:
    choice = ASL["States"]["IsJobQueueReady"]
    targets = [rule["Next"] for rule in choice["Choices"]]
    assert targets == ["SubmitBatchJob", "FallBackFromBrokenPool", "RecordFailure", "WaitForReservation"]
    assert choice["Default"] == "WaitForJobQueue"
    assert ASL["States"]["WaitForJobQueue"]["SecondsPath"] == "$.timeouts.queue_poll_seconds"
    assert ASL["States"]["FallBackFromBrokenPool"]["InputPath"] == "$.queue.next_index"


def test_a_reservation_not_begun_is_waited_for_in_one_wait_until_its_start_then_its_pool_is_checked() -> None:
    # Given the pool check's answer for a Capacity Block that has not begun: wait_until, a timestamp
    rule = ASL["States"]["IsJobQueueReady"]["Choices"][-1]
    wait = ASL["States"]["WaitForReservation"]

    # Then the workflow waits until that moment in one Wait state (no polling), and checks the pool again
    assert rule["And"] == [
        {"Variable": "$.queue.wait_until", "IsPresent": True},
        {"Variable": "$.queue.wait_until", "IsTimestamp": True},
    ]
    assert rule["Next"] == "WaitForReservation"
    assert (wait["Type"], wait["TimestampPath"], wait["Next"]) == ("Wait", "$.queue.wait_until", "EnsureJobQueue")


def test_each_pool_check_gets_the_previous_check_and_the_timeouts_that_bound_the_wait() -> None:
    # The attempt's deadline travels in $.queue (the previous check); its length in $.timeouts
    parameters = ASL["States"]["EnsureJobQueue"]["Parameters"]
    assert parameters["previous.$"] == "$.queue"
    assert parameters["timeouts.$"] == "$.timeouts"
    assert ASL["States"]["EnsureJobQueue"]["ResultPath"] == "$.queue"


def test_waits_time_out_from_the_request_and_a_stuck_start_is_diagnosed() -> None:
    start, finish = ASL["States"]["WaitForJobToStart"], ASL["States"]["WaitForJobToFinish"]
    assert start["TimeoutSecondsPath"] == "$.timeouts.stuck_after_seconds"
    assert finish["TimeoutSecondsPath"] == "$.timeouts.finish_after_seconds"
    assert start["Catch"][0] == {"ErrorEquals": ["States.Timeout"], "ResultPath": "$.stuck", "Next": "DiagnoseStuckJob"}


def test_batchs_verdict_on_a_waiting_job_is_diagnosed_at_once_and_any_other_end_of_the_wait_goes_on() -> None:
    # The start wait's output says verdict when Batch's reason is one another GPU type cures (not its timeout)
    assert ASL["States"]["WaitForJobToStart"]["Next"] == "DidJobStart"
    choice = ASL["States"]["DidJobStart"]
    [rule] = choice["Choices"]
    assert rule["And"] == [
        {"Variable": "$.started.verdict", "IsPresent": True},
        {"Variable": "$.started.verdict", "IsString": True},
    ]
    assert (rule["Next"], choice["Default"]) == ("DiagnoseStuckJob", "WaitForJobToFinish")


def test_a_reclaimed_spot_attempt_is_diagnosed_and_its_remedy_chosen_like_a_stuck_one() -> None:
    assert ASL["States"]["WaitForJobToFinish"]["Next"] == "WasSpotReclaimed"
    choice = ASL["States"]["WasSpotReclaimed"]
    [rule] = choice["Choices"]
    assert {"Variable": "$.finished.reclaimed", "BooleanEquals": True} in rule["And"]
    assert (rule["Next"], choice["Default"]) == ("DiagnoseReclaimedJob", "RecordCost")
    reclaimed, stuck = ASL["States"]["DiagnoseReclaimedJob"], ASL["States"]["DiagnoseStuckJob"]
    assert (reclaimed["Resource"], reclaimed["Parameters"]) == (stuck["Resource"], stuck["Parameters"])
    assert reclaimed["Next"] == stuck["Next"] == "ChooseRemedy"


def test_the_waits_tell_their_lambda_until_when_they_wait_and_what_the_job_tries_next() -> None:
    start = ASL["States"]["WaitForJobToStart"]["Parameters"]["Payload"]
    finish = ASL["States"]["WaitForJobToFinish"]["Parameters"]["Payload"]
    assert (start["timeout_seconds.$"], start["selection.$"]) == ("$.timeouts.stuck_after_seconds", "$.selection")
    assert (finish["timeout_seconds.$"], finish["selection.$"]) == ("$.timeouts.finish_after_seconds", "$.selection")
