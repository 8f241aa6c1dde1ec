"""The event-vs-token race: whichever of the wait and the Batch event is written second resumes the workflow."""

from __future__ import annotations

import json
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from functions.shared import clients, service
from functions.shared.store import JobStore
from functions.shared.workflow import WaitInput
from gpupilot.localcloud.deploy import Deployment

REQUEST = {"name": "train", "image": "img", "command": ["nvidia-smi"]}


class RecordingStepFunctions:
    """Step Functions as the race sees it: a token can be spent once; `throttle` calls fail first."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.throttle = 0

    def send_task_success(self, taskToken: str, output: str) -> None:
        if self.throttle:
            self.throttle -= 1
            raise ClientError({"Error": {"Code": "ThrottlingException", "Message": "slow down"}}, "SendTaskSuccess")
        if any(token == taskToken for token, _ in self.sent):
            raise ClientError({"Error": {"Code": "TaskTimedOut", "Message": "spent"}}, "SendTaskSuccess")
        self.sent.append((taskToken, json.loads(output)))


@pytest.fixture
def sfn(deployment: Deployment, monkeypatch: pytest.MonkeyPatch) -> RecordingStepFunctions:
    fake = RecordingStepFunctions()
    real = clients.client
    monkeypatch.setattr(service, "client", lambda name: fake if name == "stepfunctions" else real(name))
    store = JobStore(boto3.client("dynamodb"), deployment.table_name)
    store.create_job("job00000001", "train", REQUEST)
    store.put_attempt("job00000001", 1, {"instance_type": "g5.xlarge", "batch_job_id": "b-1"})
    return fake


def _event(status: str, **detail: Any) -> dict[str, Any]:
    return {
        "detail-type": "Batch Job State Change",
        "time": "2026-11-22T10:00:00Z",
        "detail": {"jobName": "gpupilot-job00000001-a1", "jobId": "b-1", "status": status} | detail,
    }


def _wait(phase: str, token: str) -> WaitInput:
    return WaitInput(job_id="job00000001", phase=phase, attempt=1, batch_job_id="b-1", task_token=token)  # type: ignore[arg-type]


def test_an_event_before_the_token_is_stored_is_not_lost(sfn: RecordingStepFunctions) -> None:
    # Given Batch already said RUNNING before the workflow parked its token
    service.handle_batch_event(_event("RUNNING", startedAt=1_800_000_000_000))
    # When the wait stores its token
    resumed = service.park_wait(_wait("start", "token-start"))
    # Then the wait resumes itself at once, with the status
    assert resumed == ["start"]
    assert sfn.sent == [("token-start", sfn.sent[0][1])]
    assert sfn.sent[0][1]["status"] == "RUNNING"


def test_an_event_after_the_token_is_stored_resumes_the_workflow(sfn: RecordingStepFunctions) -> None:
    assert service.park_wait(_wait("finish", "token-finish")) == []
    result = service.handle_batch_event(
        _event("SUCCEEDED", startedAt=1_800_000_000_000, stoppedAt=1_800_000_060_000, container={"exitCode": 0})
    )
    assert result["resumed"] == ["finish"]
    token, output = sfn.sent[0]
    assert token == "token-finish"
    assert output == {
        "status": "SUCCEEDED", "at": "2026-11-22T10:00:00.000Z", "exit_code": 0,
        "started_at": 1_800_000_000_000, "stopped_at": 1_800_000_060_000, "status_reason": None,
        "runtime_seconds": 60.0,
    }  # fmt: skip


def test_a_token_already_spent_by_the_other_side_is_not_an_error(sfn: RecordingStepFunctions) -> None:
    service.park_wait(_wait("start", "token-start"))
    service.handle_batch_event(_event("RUNNING"))
    # When a duplicate event is delivered again (EventBridge is at-least-once)
    again = service.handle_batch_event(_event("SUCCEEDED"))
    # Then nothing is sent twice and nothing fails
    assert [token for token, _ in sfn.sent] == ["token-start"]
    assert again["resumed"] == []


def test_a_redelivered_event_resumes_a_workflow_whose_first_resume_failed(
    deployment: Deployment, sfn: RecordingStepFunctions
) -> None:
    # Given a parked finish wait, and SendTaskSuccess throttled when the event first arrives
    service.park_wait(_wait("finish", "token-finish"))
    sfn.throttle = 1
    with pytest.raises(ClientError):
        service.handle_batch_event(_event("SUCCEEDED", startedAt=1_000, stoppedAt=61_000))
    # When EventBridge delivers the same event again
    again = service.handle_batch_event(_event("SUCCEEDED", startedAt=1_000, stoppedAt=61_000))
    # Then the duplicate is not recorded twice but the workflow is resumed, and the spent token forgotten
    record = JobStore(boto3.client("dynamodb"), deployment.table_name).get_job("job00000001")
    assert again["ignored"] == "stale or duplicate event"
    assert again["resumed"] == ["finish"]
    assert [token for token, _ in sfn.sent] == ["token-finish"]
    assert "finish" not in record["waits"]
