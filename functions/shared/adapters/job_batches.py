"""The job store's reads and writes of many jobs at once (the sweep): BatchGetItem for records, and
TransactWriteItems for conditional writes, each write applied or refused on its own."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from botocore.exceptions import ClientError

from functions.shared.adapters.job_lists import JobLists, job_key, record_of
from functions.shared.adapters.job_updates import update_of
from functions.shared.adapters.transient import TransientAwsError
from functions.shared.domain.jobs.records import JobRecord
from functions.shared.domain.jobs.writes import JobWrite

# What this module's calls are authorized against (the IAM drift check holds it to that). A transaction's updates
# are authorized as dynamodb:UpdateItem each ("Using IAM with DynamoDB transactions").
IAM_ACTIONS = ("dynamodb:BatchGetItem", "dynamodb:UpdateItem")
BATCH_GET_ITEMS = 100  # BatchGetItem reads at most 100 items a call
TRANSACT_ITEMS = 100  # TransactWriteItems writes at most 100 items a call
TRANSACT_ATTEMPTS = 3  # transactions cancelled by other writers' conflicts, before the updates go one by one
UNPROCESSED_ATTEMPTS = 5
UNPROCESSED_PAUSE_SECONDS = 0.05


def is_conditional_failure(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


class JobBatches(JobLists):
    """Many jobs at once: the part of ports.JobStore the sweep uses to stay within calls per page, not per job."""

    def _update(self, job_id: str, **kwargs: Any) -> dict[str, Any] | None:
        """UpdateItem on the job; None when its condition failed."""
        try:
            return dict(self._aws.update_item(TableName=self._table, Key=job_key(job_id), **kwargs))
        except ClientError as error:
            if is_conditional_failure(error):
                return None
            raise

    def get_jobs(self, job_ids: Sequence[str]) -> dict[str, JobRecord]:
        """Several records, read consistently, BATCH_GET_ITEMS a call; unknown ids are left out."""
        found: dict[str, JobRecord] = {}
        wanted = list(dict.fromkeys(job_ids))
        for start in range(0, len(wanted), BATCH_GET_ITEMS):
            keys = [job_key(job_id) for job_id in wanted[start : start + BATCH_GET_ITEMS]]
            for attempt in range(UNPROCESSED_ATTEMPTS):
                response = self._aws.batch_get_item(RequestItems={self._table: {"Keys": keys, "ConsistentRead": True}})
                for item in response.get("Responses", {}).get(self._table, []):
                    record = record_of(item)
                    found[record.job_id] = record
                # What DynamoDB left unread (throughput, the 16 MB answer limit) is asked again, after a pause.
                keys = response.get("UnprocessedKeys", {}).get(self._table, {}).get("Keys", [])
                if not keys:
                    break
                time.sleep(UNPROCESSED_PAUSE_SECONDS * 2**attempt)
            else:
                raise TransientAwsError(f"BatchGetItem left {len(keys)} records unread")
        return found

    def write_many(self, writes: Sequence[JobWrite]) -> list[bool]:
        """Many writes, each as conditional as its single form and applied or refused on its own (True where it
        applied), in one TransactWriteItems per TRANSACT_ITEMS jobs; a job's writes apply in the order given."""
        updates = [(write.job_id, update_of(write)) for write in writes]
        applied = [False] * len(updates)
        pending = list(range(len(updates)))
        while pending:
            # A transaction names each item once: a job's second write goes in the next round.
            this_round: list[int] = []
            later: list[int] = []
            jobs: set[str] = set()
            for index in pending:
                job_id = updates[index][0]
                (later if job_id in jobs or len(this_round) == TRANSACT_ITEMS else this_round).append(index)
                jobs.add(job_id)
            for index, done in zip(this_round, self._transact([updates[i] for i in this_round]), strict=True):
                applied[index] = done
            pending = later
        return applied

    def _transact(self, updates: list[tuple[str, dict[str, Any]]]) -> list[bool]:
        """Updates of distinct jobs in one transaction. A transaction applies all or nothing: one whose condition
        fails is left out and the rest sent again; conflicts with other writers are tried again, then what is still
        pending is written one update at a time, each as conditional as in the transaction."""
        applied = [False] * len(updates)
        pending = list(range(len(updates)))
        conflicts = 0
        while pending and conflicts < TRANSACT_ATTEMPTS:
            items = [
                {"Update": {"TableName": self._table, "Key": job_key(updates[i][0]), **updates[i][1]}} for i in pending
            ]
            try:
                self._aws.transact_write_items(TransactItems=items)
            except ClientError as error:
                codes = _cancellation_codes(error, len(pending))
                refused = [i for i, code in zip(pending, codes, strict=True) if code == "ConditionalCheckFailed"]
                if not refused:
                    conflicts += 1
                pending = [i for i in pending if i not in refused]
                continue
            for i in pending:
                applied[i] = True
            return applied
        for i in pending:
            applied[i] = self._update(updates[i][0], **updates[i][1]) is not None
        return applied


def _cancellation_codes(error: ClientError, items: int) -> list[str]:
    """Why each item of a cancelled transaction was not written (`None`: it would have been); any other error
    than a cancellation for failed conditions or conflicts is raised."""
    reasons = error.response.get("CancellationReasons") or []
    codes = [str(reason.get("Code")) for reason in reasons]
    cancelled = error.response.get("Error", {}).get("Code") == "TransactionCanceledException"
    if not cancelled or len(codes) != items or set(codes) - {"None", "ConditionalCheckFailed", "TransactionConflict"}:
        raise error
    return codes
