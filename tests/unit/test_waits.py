"""Resuming parked workflow waits: which waits the record satisfies, and sending their tokens."""

from __future__ import annotations

import json
from typing import Any

import pytest
from botocore.exceptions import ClientError

from functions.shared.waits import ready_waits, send_ready


def record(waits: dict[str, Any], attempts: dict[str, Any]) -> dict[str, Any]:
    return {"job_id": "0123456789abcdef0123", "waits": waits, "attempts": attempts}


def attempt(batch_status: str, **fields: Any) -> dict[str, Any]:
    return {"batch_status": batch_status, "batch_status_at": "2024-05-01T12:00:00.000Z", **fields}


class FakeStepFunctions:
    """Records SendTaskSuccess calls; refuses the tokens it is told to with the given error code."""

    def __init__(self, refuse: dict[str, str] | None = None) -> None:
        self.refuse = refuse or {}
        self.sent: list[dict[str, Any]] = []

    def send_task_success(self, taskToken: str, output: str) -> dict[str, Any]:
        if taskToken in self.refuse:
            raise ClientError({"Error": {"Code": self.refuse[taskToken], "Message": "refused"}}, "SendTaskSuccess")
        self.sent.append({"taskToken": taskToken, "output": json.loads(output)})
        return {}


# -- ready_waits ----------------------------------------------------------------------------------
def test_running_attempt_releases_the_start_wait_but_not_the_finish_wait():
    # Given both waits parked on attempt 1, which is RUNNING
    rec = record(
        {"start": {"attempt": 1, "token": "tok-start"}, "finish": {"attempt": 1, "token": "tok-finish"}},
        {"1": attempt("RUNNING")},
    )

    # When looking for ready waits
    ready = ready_waits(rec)

    # Then only the start wait is ready
    assert [(phase, token) for phase, token, _ in ready] == [("start", "tok-start")]


def test_finished_attempt_releases_both_waits():
    # Given both waits parked on attempt 1, which SUCCEEDED
    rec = record(
        {"start": {"attempt": 1, "token": "tok-start"}, "finish": {"attempt": 1, "token": "tok-finish"}},
        {"1": attempt("SUCCEEDED")},
    )

    # When / Then
    assert [phase for phase, _, _ in ready_waits(rec)] == ["start", "finish"]


def test_wait_is_judged_by_its_own_attempt_not_an_earlier_one():
    # Given attempt 1 FAILED (and fell back) and the finish wait parked on attempt 2, still RUNNABLE
    rec = record({"finish": {"attempt": 2, "token": "tok-finish"}}, {"1": attempt("FAILED"), "2": attempt("RUNNABLE")})

    # When / Then: attempt 1's end does not release attempt 2's wait
    assert ready_waits(rec) == []


def test_wait_on_an_attempt_with_no_status_yet_is_not_ready():
    # Given a wait parked before any Batch event arrived
    rec = record({"start": {"attempt": 1, "token": "tok-start"}}, {})

    # When / Then
    assert ready_waits(rec) == []


def test_ready_wait_output_is_the_attempts_batch_status_and_times():
    # Given a finished attempt with times and exit code
    rec = record(
        {"finish": {"attempt": 1, "token": "tok"}},
        {
            "1": attempt(
                "FAILED",
                exit_code=3,
                started_at=1000,
                stopped_at=61000,
                status_reason="Essential container",
                runtime_seconds=60.0,
            )
        },
    )

    # When
    [(_, _, output)] = ready_waits(rec)

    # Then
    assert output.model_dump() == {
        "status": "FAILED",
        "at": "2024-05-01T12:00:00.000Z",
        "exit_code": 3,
        "started_at": 1000,
        "stopped_at": 61000,
        "status_reason": "Essential container",
        "runtime_seconds": 60.0,
    }


# -- resume -----------------------------------------------------------------------------------------
def test_resume_sends_the_token_with_the_wait_result_as_output():
    # Given a start wait on a RUNNING attempt
    sfn = FakeStepFunctions()
    rec = record({"start": {"attempt": 1, "token": "tok-start"}}, {"1": attempt("RUNNING", started_at=1000)})

    # When resuming
    resumed = send_ready(sfn, rec)[0]

    # Then SendTaskSuccess carries the WaitResult JSON, and the phase is reported
    assert resumed == ["start"]
    assert sfn.sent == [
        {
            "taskToken": "tok-start",
            "output": {
                "status": "RUNNING",
                "at": "2024-05-01T12:00:00.000Z",
                "exit_code": None,
                "started_at": 1000,
                "stopped_at": None,
                "status_reason": None,
                "runtime_seconds": None,
            },
        }
    ]


def test_resume_sends_nothing_when_no_wait_is_satisfied():
    # Given a start wait on a RUNNABLE attempt
    sfn = FakeStepFunctions()

    # When
    resumed = send_ready(sfn, record({"start": {"attempt": 1, "token": "tok"}}, {"1": attempt("RUNNABLE")}))[0]

    # Then
    assert (resumed, sfn.sent) == ([], [])


@pytest.mark.parametrize("code", ["TaskTimedOut", "InvalidToken", "TaskDoesNotExist"])
def test_resume_ignores_a_token_already_spent_by_the_other_side(code):
    # Given Step Functions refusing the token because the other writer already sent it
    sfn = FakeStepFunctions(refuse={"tok-start": code})
    rec = record({"start": {"attempt": 1, "token": "tok-start"}}, {"1": attempt("RUNNING")})

    # When resuming
    resumed = send_ready(sfn, rec)[0]

    # Then no error escapes and the phase is not reported as resumed
    assert resumed == []


def test_resume_goes_on_to_the_next_wait_after_a_spent_token():
    # Given a spent start token and a live finish token
    sfn = FakeStepFunctions(refuse={"tok-start": "InvalidToken"})
    rec = record(
        {"start": {"attempt": 1, "token": "tok-start"}, "finish": {"attempt": 1, "token": "tok-finish"}},
        {"1": attempt("SUCCEEDED")},
    )

    # When / Then
    assert send_ready(sfn, rec)[0] == ["finish"]
    assert [s["taskToken"] for s in sfn.sent] == ["tok-finish"]


def test_resume_raises_other_step_functions_errors():
    # Given Step Functions throttling the call
    sfn = FakeStepFunctions(refuse={"tok-start": "ThrottlingException"})
    rec = record({"start": {"attempt": 1, "token": "tok-start"}}, {"1": attempt("RUNNING")})

    # When / Then: the caller's retry handles it
    with pytest.raises(ClientError) as raised:
        send_ready(sfn, rec)
    assert raised.value.response["Error"]["Code"] == "ThrottlingException"
