"""The job store on DynamoDB: the job record, its attempts, waits and timeline, in one item per job.

Every write that can race is conditional: job statuses only move forward (`status_rank`), an attempt is
created once, an attempt's Batch status only moves forward (`batch_rank`), a finished job is never
reopened. ClientErrors become domain exceptions here.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from functions.shared import constants as c
from functions.shared.adapters.budget_store import commit_update
from functions.shared.adapters.dynamodb_codec import serialize
from functions.shared.adapters.job_items import JobItems, is_conditional_failure
from functions.shared.adapters.job_lists import job_key, list_keys, record_of
from functions.shared.adapters.job_updates import advance_update, attempt_update
from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.core.errors import BudgetFull, JobAlreadyExists, JobNotFound
from functions.shared.domain.core.vocabulary import BatchStatus, JobStatus
from functions.shared.domain.jobs.lifecycle import status_rank
from functions.shared.domain.jobs.records import AttemptRecord, JobRecord, Ownership, TimelineEntry
from functions.shared.domain.requests.job_request import JobRequest

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem")
__all__ = ["DynamoJobStore", "is_conditional_failure"]


class DynamoJobStore(JobItems):
    """Implements ports.JobStore (the list queries come from JobLists, many jobs at once from JobBatches, waits
    and notes from JobItems)."""

    # -- jobs ---------------------------------------------------------------------------------
    def create_job(self, job_id: str, request: JobRequest, ownership: Ownership | None = None) -> JobRecord:
        """Write a new SUBMITTED job; fails with JobAlreadyExists rather than overwrite one. A job that commits part
        of its team's budget is written with the commitment in one transaction (BudgetFull: the budget refused it)."""
        at = now_iso()
        record = JobRecord(
            job_id=job_id,
            name=request.name,
            status=JobStatus.SUBMITTED,
            status_rank=status_rank(JobStatus.SUBMITTED),
            request=request,
            timeline=[TimelineEntry(status=JobStatus.SUBMITTED, at=at)],
            created_at=at,
            updated_at=at,
            **(ownership.model_dump() if ownership else {}),
        )
        # stuck_after_minutes also stands alone, for the index of unfinished jobs to project (not the whole request).
        document = (
            record.model_dump(mode="json")
            | list_keys(job_id, at)
            | {"stuck_after_minutes": request.stuck_after_minutes}
        )
        item = {k: serialize(v) for k, v in document.items() if v is not None} | job_key(job_id)
        put = {
            "TableName": self._table,
            "Item": item,
            "ConditionExpression": "attribute_not_exists(#pk)",
            "ExpressionAttributeNames": {"#pk": c.TABLE_PK},
        }
        commitment = ownership.commitment if ownership else None
        if commitment is not None:
            ledger = commit_update(commitment, commitment.usd) | {"TableName": self._table}
            try:
                self._aws.transact_write_items(TransactItems=[{"Put": put}, {"Update": ledger}])
            except ClientError as error:
                codes = [str(r.get("Code")) for r in error.response.get("CancellationReasons") or []]
                if codes[:1] == ["ConditionalCheckFailed"]:
                    raise JobAlreadyExists(job_id) from error
                if codes[1:2] == ["ConditionalCheckFailed"]:
                    raise BudgetFull(commitment.team) from error
                raise
            return record
        try:
            self._aws.put_item(**put)
        except ClientError as error:
            if is_conditional_failure(error):
                raise JobAlreadyExists(job_id) from error
            raise
        return record

    def get_job(self, job_id: str) -> JobRecord:
        response = self._aws.get_item(TableName=self._table, Key=job_key(job_id), ConsistentRead=True)
        if "Item" not in response:
            raise JobNotFound(job_id)
        return record_of(response["Item"])

    def set_execution_arn(self, job_id: str, execution_arn: str) -> None:
        self._update(
            job_id,
            UpdateExpression="SET execution_arn = :arn",
            ExpressionAttributeValues={":arn": {"S": execution_arn}},
        )

    def advance(
        self,
        job_id: str,
        status: JobStatus,
        attempt: int,
        at: str | None = None,
        fields: dict[str, Any] | None = None,
        reason: str | None = None,
    ) -> bool:
        """Move the job to `status` (appending it to the timeline) unless it is already past it."""
        return self._update(job_id, **advance_update(status, attempt, at, fields, reason)) is not None

    def finish(
        self,
        job_id: str,
        status: JobStatus,
        at: str | None = None,
        fields: dict[str, Any] | None = None,
        reason: str | None = None,
    ) -> bool:
        """Record the job's final status once; a cancelled or finished job keeps its outcome."""
        return self.advance(job_id, status, attempt=0, at=at, fields=fields, reason=reason)

    # -- attempts -----------------------------------------------------------------------------
    def put_attempt(self, job_id: str, number: int, attempt: AttemptRecord) -> AttemptRecord:
        """Create attempt `number` once; returns the stored attempt (the existing one on a retry)."""
        response = self._update(
            job_id,
            UpdateExpression="SET attempts.#n = :attempt, updated_at = :now",
            ConditionExpression="attribute_exists(#pk) AND attribute_not_exists(attempts.#n)",
            ExpressionAttributeNames={"#n": str(number), "#pk": c.TABLE_PK},
            ExpressionAttributeValues={":attempt": serialize(attempt), ":now": serialize(now_iso())},
            ReturnValues="ALL_NEW",
        )
        record = record_of(response["Attributes"]) if response else self.get_job(job_id)
        return record.attempts[number]

    def update_attempt(
        self,
        job_id: str,
        number: int,
        fields: dict[str, Any],
        if_missing: dict[str, Any] | None = None,
        timeline_reason: tuple[int, str, str] | None = None,
    ) -> JobRecord | None:
        """Set fields on an attempt; with a `batch_status`, only if it moves the attempt forward.
        `if_missing` fields are set only where the attempt has none yet; `timeline_reason` (index, reason, when it
        was learnt) explains that timeline entry (entries are only ever appended). None when stale or duplicate."""
        update = attempt_update(number, fields, if_missing, timeline_reason)
        response = self._update(job_id, **update, ReturnValues="ALL_NEW")
        return record_of(response["Attributes"]) if response else None

    def note_reason(
        self,
        job_id: str,
        number: int,
        status: BatchStatus,
        reason: str,
        timeline_index: int | None = None,
        at: str | None = None,
    ) -> JobRecord | None:
        """Set the attempt's status_reason while its Batch status is still `status` (and that timeline entry's,
        learnt `at`); the record as the write left it, None when the attempt moved on."""
        now = now_iso()
        timeline = ""
        if timeline_index is not None:
            entry = f"timeline[{int(timeline_index)}]"
            timeline = f", {entry}.reason = :reason, {entry}.reason_at = :learnt"
        values = {":reason": serialize(reason), ":status": serialize(status), ":now": serialize(now)}
        if timeline_index is not None:
            values[":learnt"] = serialize(at or now)
        response = self._update(
            job_id,
            UpdateExpression=f"SET attempts.#n.status_reason = :reason, updated_at = :now{timeline}",
            ConditionExpression="attempts.#n.batch_status = :status",
            ExpressionAttributeNames={"#n": str(number)},
            ExpressionAttributeValues=values,
            ReturnValues="ALL_NEW",
        )
        return record_of(response["Attributes"]) if response else None
