"""Resuming a parked workflow: whoever writes second (the wait or the Batch event) sends the token.

The wait Lambda stores its token and then reads the attempt's status; job_events stores the status and
then reads the token. Both writes go first, so at least one side sees both and resumes the workflow;
when both do, the second `SendTaskSuccess` is refused by Step Functions and ignored here.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from functions.shared.lifecycle import wait_satisfied
from functions.shared.observability import logger
from functions.shared.workflow import WaitResult

SPENT_TOKEN_ERRORS = frozenset({"TaskTimedOut", "InvalidToken", "TaskDoesNotExist"})
PHASES = ("start", "finish")


def wait_result(attempt: dict[str, Any]) -> WaitResult:
    """The resumed wait's output, from the attempt as the record holds it."""
    return WaitResult(
        status=attempt["batch_status"],
        at=attempt.get("batch_status_at"),
        exit_code=attempt.get("exit_code"),
        started_at=attempt.get("started_at"),
        stopped_at=attempt.get("stopped_at"),
        status_reason=attempt.get("status_reason"),
        runtime_seconds=attempt.get("runtime_seconds"),
    )


def ready_waits(record: dict[str, Any]) -> list[tuple[str, str, WaitResult]]:
    """(phase, token, output) of each parked wait that the record's attempt status satisfies."""
    ready = []
    for phase in PHASES:
        wait = (record.get("waits") or {}).get(phase)
        if not wait:
            continue
        attempt = (record.get("attempts") or {}).get(str(wait["attempt"])) or {}
        if wait_satisfied(phase, attempt.get("batch_status")):
            ready.append((phase, wait["token"], wait_result(attempt)))
    return ready


def send_ready(sfn: Any, record: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Send every satisfied wait's token: (phases resumed, phases whose token was already spent)."""
    resumed: list[str] = []
    spent: list[str] = []
    for phase, token, output in ready_waits(record):
        try:
            sfn.send_task_success(taskToken=token, output=output.model_dump_json())
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") not in SPENT_TOKEN_ERRORS:
                raise
            logger.info("wait already resumed", extra={"job_id": record.get("job_id"), "phase": phase})
            spent.append(phase)
            continue
        resumed.append(phase)
    return resumed, spent
