"""One job's item on DynamoDB: the conditional UpdateItem every write to it goes through, and the writes that only
add to it (a parked workflow's task token, a note on its timeline)."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from functions.shared import constants as c
from functions.shared.adapters.dynamodb_codec import serialize
from functions.shared.adapters.job_lists import JobLists, job_key, record_of
from functions.shared.domain.clock import now_iso
from functions.shared.domain.errors import JobNotFound
from functions.shared.domain.records import JobRecord, TimelineEntry, Wait
from functions.shared.domain.vocabulary import JobStatus, WaitPhase

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("dynamodb:UpdateItem",)


def is_conditional_failure(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


class JobItems(JobLists):
    """The write path shared by ports.JobStore's writes, and its waits and timeline notes."""

    def _update(self, job_id: str, **kwargs: Any) -> dict[str, Any] | None:
        """UpdateItem on the job; None when its condition failed."""
        try:
            return dict(self._aws.update_item(TableName=self._table, Key=job_key(job_id), **kwargs))
        except ClientError as error:
            if is_conditional_failure(error):
                return None
            raise

    def note_host(self, job_id: str, status: JobStatus, instance_id: str, reason: str, at: str) -> bool:
        """A timeline note once per host: the hosts noted are a set on the item, checked and added in one write."""
        entry = serialize([TimelineEntry(status=status, at=at, reason=reason)])
        ids = {":ids": {"SS": [instance_id]}, ":id": {"S": instance_id}}
        values = {":entry": entry, ":now": serialize(now_iso())} | ids
        noted = self._update(
            job_id,
            UpdateExpression="SET timeline = list_append(timeline, :entry), updated_at = :now ADD hosts_noted :ids",
            ConditionExpression="attribute_exists(#pk) AND NOT contains(hosts_noted, :id)",
            ExpressionAttributeNames={"#pk": c.TABLE_PK},
            ExpressionAttributeValues=values,
        )
        return noted is not None

    # -- waits --------------------------------------------------------------------------------
    def store_wait(self, job_id: str, phase: WaitPhase, wait: Wait) -> JobRecord:
        """Park the workflow's task token for `phase`; returns the record as it is after the write."""
        response = self._update(
            job_id,
            UpdateExpression="SET waits.#phase = :wait",
            ConditionExpression="attribute_exists(#pk)",
            ExpressionAttributeNames={"#phase": phase.value, "#pk": c.TABLE_PK},
            ExpressionAttributeValues={":wait": serialize(wait)},
            ReturnValues="ALL_NEW",
        )
        if response is None:
            raise JobNotFound(job_id)
        return record_of(response["Attributes"])

    def clear_wait(self, job_id: str, phase: WaitPhase, token: str) -> None:
        """Forget a spent token, unless a newer wait has replaced it meanwhile."""
        self._update(
            job_id,
            UpdateExpression="REMOVE waits.#phase",
            ConditionExpression="waits.#phase.#token = :token",
            ExpressionAttributeNames={"#phase": phase.value, "#token": "token"},
            ExpressionAttributeValues={":token": {"S": token}},
        )
