"""One job's item on DynamoDB: the writes that only add to it (a parked workflow's task token, a note on its
timeline, an attempt's Batch retries); every write goes through JobBatches' conditional UpdateItem."""

from __future__ import annotations

from functions.shared import constants as c
from functions.shared.adapters.dynamodb_codec import serialize
from functions.shared.adapters.job_batches import JobBatches, is_conditional_failure
from functions.shared.adapters.job_lists import record_of
from functions.shared.adapters.job_updates import clear_wait_update
from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.core.errors import JobNotFound
from functions.shared.domain.core.vocabulary import JobStatus, WaitPhase
from functions.shared.domain.jobs.records import JobRecord, TimelineEntry, Wait
from functions.shared.domain.jobs.retries import BatchRetry

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("dynamodb:UpdateItem",)
__all__ = ["JobItems", "is_conditional_failure"]


class JobItems(JobBatches):
    """A job's waits and timeline notes (through the conditional UpdateItem JobBatches shares with every write)."""

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

    def note_retries(self, job_id: str, number: int, retries: list[BatchRetry]) -> bool:
        """The attempt's Batch retries, written only over fewer of them (events come in any order)."""
        noted = self._update(
            job_id,
            UpdateExpression="SET attempts.#n.batch_retries = :retries, updated_at = :now",
            ConditionExpression="attribute_exists(attempts.#n) AND (attribute_not_exists(attempts.#n.batch_retries) "
            "OR size(attempts.#n.batch_retries) < :count)",
            ExpressionAttributeNames={"#n": str(number)},
            ExpressionAttributeValues={
                ":retries": serialize(retries),
                ":count": serialize(len(retries)),
                ":now": serialize(now_iso()),
            },
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
        self._update(job_id, **clear_wait_update(phase, token))
