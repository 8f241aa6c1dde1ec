"""CloudWatch Logs: the streams Batch writes a job's output to.

IAM (Service Authorization Reference for CloudWatch Logs): GetLogEvents is authorized against the log stream
(`log-group:NAME:log-stream:STREAM`), so the api function is granted it on GPU Pilot's streams only.
"""

from __future__ import annotations

from datetime import UTC, datetime

from botocore.exceptions import ClientError

from functions.shared.adapters.base import ClientAdapter
from functions.shared.domain.core.errors import InvalidPageToken
from functions.shared.domain.jobs.logs import LogEvent, LogPage

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("logs:GetLogEvents",)
# Lines per page: GetLogEvents returns up to 10,000 events or 1 MB; a page the API answers with stays small.
LOG_PAGE = 1000


class CloudWatchJobLogs(ClientAdapter):
    """Implements ports.JobLogs."""

    service = "logs"

    def read(self, log_group: str, log_stream: str, next_token: str | None) -> LogPage:
        # startFromHead: oldest first; a forward token read on must be sent with it (GetLogEvents, startFromHead).
        arguments = {"logGroupName": log_group, "logStreamName": log_stream, "startFromHead": True, "limit": LOG_PAGE}
        try:
            answer = self._aws.get_log_events(**arguments, **({"nextToken": next_token} if next_token else {}))
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code")
            # Named by Batch at RUNNING, the stream exists once the container's log driver has created it.
            if code == "ResourceNotFoundException":
                return LogPage(next_token=next_token)
            # A token CloudWatch Logs did not issue, or one past its 24 hours.
            if code == "InvalidParameterException" and next_token:
                raise InvalidPageToken(next_token) from error
            raise
        events = [
            LogEvent(at=_iso(event["timestamp"]), message=str(event.get("message", "")))
            for event in answer.get("events", [])
        ]
        return LogPage(events=events, next_token=answer.get("nextForwardToken") or next_token)


def _iso(millis: int) -> str:
    return datetime.fromtimestamp(millis / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
