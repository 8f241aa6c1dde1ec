"""The job store's list queries and the helpers both halves share.

Both job indexes are sharded alike, by a hash of the job id: `gsi1` lists every job by creation time
(partitions `JOBS#0`..`JOBS#n`), `active` only unfinished ones (`ACTIVE#0`..`ACTIVE#n`, which the sweep scans
whole), so no burst of submits lands on one partition. A list reads every shard newest first and merges
them; its page token is the position the page ended at (page_tokens.py).
"""

from __future__ import annotations

import hashlib
from collections import deque
from typing import Any

from botocore.exceptions import ClientError

from functions.shared import constants as c
from functions.shared.adapters.base import ClientAdapter
from functions.shared.adapters.dynamodb_codec import deserialize_item
from functions.shared.adapters.page_tokens import decode_token, encode_token, list_position
from functions.shared.domain.core.vocabulary import JobStatus
from functions.shared.domain.jobs.records import ActiveJob, JobRecord

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("dynamodb:Query", "dynamodb:Scan")
# Jobs written before the list index was sharded sit in this one partition: read as one more shard, never
# written again, so they stay listed (and counted by /costs) without a migration.
UNSHARDED_LIST_PARTITION = "JOBS"
# The queries one list page may make (a status filter that few jobs match reads on until the page is full).
MAX_LIST_READS = 40
MAX_READ_ITEMS = 100


def job_key(job_id: str) -> dict[str, Any]:
    return {c.TABLE_PK: {"S": f"JOB#{job_id}"}, c.TABLE_SK: {"S": "JOB"}}


def job_shard(job_id: str) -> int:
    """The shard of both job indexes a job is written to (uniform over job ids)."""
    return int(hashlib.sha256(job_id.encode()).hexdigest(), 16) % c.JOB_INDEX_SHARDS


def list_partitions() -> list[str]:
    """Every partition of the job list: its shards, then the one unsharded jobs were written to."""
    return [f"JOBS#{shard}" for shard in range(c.JOB_INDEX_SHARDS)] + [UNSHARDED_LIST_PARTITION]


def list_keys(job_id: str, created_at: str) -> dict[str, str]:
    """The index attributes that list a job by creation time, and among unfinished jobs (removed at its end)."""
    shard = job_shard(job_id)
    position = list_position(created_at, job_id)
    return {
        c.GSI1_PK: f"JOBS#{shard}",
        c.GSI1_SK: position,
        c.GSI2_PK: f"ACTIVE#{shard}",
        c.GSI2_SK: position,
    }


def record_of(item: dict[str, Any]) -> JobRecord:
    return JobRecord.model_validate(deserialize_item(item))


def active_job_of(item: dict[str, Any]) -> ActiveJob:
    """An unfinished job as the sweep reads it, from its index's item (or, while that index is filled, from its
    predecessor's whole record, whose request holds the job's stuck_after)."""
    data = deserialize_item(item)
    if data.get("stuck_after_minutes") is None and isinstance(data.get("request"), dict):
        data["stuck_after_minutes"] = data["request"].get("stuck_after_minutes")
    return ActiveJob.model_validate(data)


def is_backfilling(error: ClientError) -> bool:
    """DynamoDB refuses reads of a global secondary index until it has indexed every item of the table."""
    details = error.response.get("Error", {})
    return details.get("Code") == "ValidationException" and "backfill" in str(details.get("Message", "")).lower()


class _NewestFirst:
    """One partition of the job list, read newest first a few items at a time as the merge needs them."""

    def __init__(self, query: dict[str, Any], first_read: int) -> None:
        self.query = query
        self.read_size = first_read
        self.items: deque[tuple[str, dict[str, Any]]] = deque()
        self.more = True
        # Everything at or after this position (newer) has been read; the rest is older.
        self.frontier: str | None = None

    def may_hold_newer_than(self, position: str | None) -> bool:
        """Whether an item not read yet could come before `position` (None: before anything)."""
        if self.items or not self.more:
            return False
        return position is None or self.frontier is None or self.frontier > position

    def read(self, aws: Any) -> None:
        kwargs = self.query | {"Limit": self.read_size}
        response = aws.query(**kwargs)
        self.items.extend((item[c.GSI1_SK]["S"], item) for item in response.get("Items", []))
        last = response.get("LastEvaluatedKey")
        self.more = last is not None
        if last is not None:
            self.query = self.query | {"ExclusiveStartKey": last}
            self.frontier = last[c.GSI1_SK]["S"]
        # A filter that matches little empties reads: read more at a time, up to a full read.
        self.read_size = min(self.read_size * 2, MAX_READ_ITEMS)


class JobLists(ClientAdapter):
    """Read side of ports.JobStore: lists of job records."""

    service = "dynamodb"

    def __init__(self, table_name: str, dynamodb: Any | None = None) -> None:
        super().__init__(dynamodb)
        self._table = table_name

    # -- lists --------------------------------------------------------------------------------
    def list_jobs(
        self, status: JobStatus | None, limit: int, next_token: str | None, team: str | None = None
    ) -> tuple[list[JobRecord], str | None]:
        """Newest jobs first, optionally of one status and one team, a page at a time: every shard, merged in
        order."""
        after = decode_token(next_token) if next_token else None
        partitions = list_partitions()
        # Enough from each shard, as jobs spread evenly over them, that a page is mostly one read of each.
        first_read = min(limit, -(-2 * limit // c.JOB_INDEX_SHARDS) + 1)
        shards = [
            _NewestFirst(self._list_query(partition, status, after, team), first_read) for partition in partitions
        ]
        page: list[tuple[str, dict[str, Any]]] = []
        reads = 0
        while len(page) < limit:
            heads = [shard for shard in shards if shard.items]
            newest = max(heads, key=lambda shard: shard.items[0][0]) if heads else None
            head = newest.items[0][0] if newest else None
            # A shard whose unread rest could hold a newer job than the newest read is read first.
            unread = [shard for shard in shards if shard.may_hold_newer_than(head)]
            if unread:
                if reads + len(unread) > MAX_LIST_READS:
                    # Out of reads: the next page starts where every shard's unread rest begins.
                    frontiers = [shard.frontier for shard in unread if shard.frontier is not None]
                    return [record_of(item) for _, item in page], encode_token(max(frontiers)) if frontiers else None
                for shard in unread:
                    shard.read(self._aws)
                reads += len(unread)
                continue
            if newest is None:
                break  # every shard read to its end
            page.append(newest.items.popleft())
        more = any(shard.items or shard.more for shard in shards)
        token = encode_token(page[-1][0]) if page and more else None
        return [record_of(item) for _, item in page], token

    def _list_query(
        self, partition: str, status: JobStatus | None, after: str | None, team: str | None = None
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": c.GSI1_NAME,
            "KeyConditionExpression": "#gpk = :partition",
            "ExpressionAttributeNames": {"#gpk": c.GSI1_PK},
            "ExpressionAttributeValues": {":partition": {"S": partition}},
            "ScanIndexForward": False,
        }
        if after:
            kwargs["KeyConditionExpression"] += " AND #gsk < :after"
            kwargs["ExpressionAttributeNames"]["#gsk"] = c.GSI1_SK
            kwargs["ExpressionAttributeValues"][":after"] = {"S": after}
        filters = []
        if status:
            filters.append("#status = :status")
            kwargs["ExpressionAttributeNames"]["#status"] = "status"
            kwargs["ExpressionAttributeValues"][":status"] = {"S": status.value}
        if team:
            filters.append("#team = :team")
            kwargs["ExpressionAttributeNames"]["#team"] = "team"
            kwargs["ExpressionAttributeValues"][":team"] = {"S": team}
        if filters:
            kwargs["FilterExpression"] = " AND ".join(filters)
        return kwargs

    def active_jobs(self, max_items: int = 20000) -> list[ActiveJob]:
        """Every unfinished job (the sweep's working set): the sparse index read whole, a page at a time.

        A Scan, not a Query per shard: the index holds only unfinished jobs, so the read costs a call per 1 MB of
        their entries ("If the total size of scanned items exceeds the maximum dataset size limit of 1 MB, the scan
        completes and results are returned", Scan), however the jobs fall over the shards, where a Query per shard
        costs a call per shard however few jobs are unfinished."""
        scan = {"TableName": self._table, "IndexName": c.GSI2_NAME}
        try:
            items = self._scanned(scan, max_items)
        except ClientError as error:
            if not is_backfilling(error):
                raise
            # Just deployed: DynamoDB is still filling the index. Its predecessor holds the same jobs.
            items = self._scanned(scan | {"IndexName": c.GSI2_LEGACY_NAME}, max_items)
        return [active_job_of(item) for item in items]

    def jobs_created_between(self, start: str, end: str, max_items: int = 5000) -> list[JobRecord]:
        """Jobs created in [start, end] (ISO strings compared as the sort key is), oldest first."""
        found: list[JobRecord] = []
        for partition in list_partitions():
            found += self._query(
                {
                    "TableName": self._table,
                    "IndexName": c.GSI1_NAME,
                    "KeyConditionExpression": "#gpk = :partition AND #gsk BETWEEN :start AND :end",
                    "ExpressionAttributeNames": {"#gpk": c.GSI1_PK, "#gsk": c.GSI1_SK},
                    "ExpressionAttributeValues": {
                        ":partition": {"S": partition},
                        ":start": {"S": start},
                        ":end": {"S": end + "\uffff"},
                    },
                },
                max_items,
            )
        found.sort(key=lambda record: list_position(record.created_at, record.job_id))
        return found[:max_items]

    def _query(self, kwargs: dict[str, Any], max_items: int) -> list[JobRecord]:
        """Every record a query matches, at most `max_items`."""
        return [record_of(item) for item in self._items(kwargs, max_items)]

    def _scanned(self, kwargs: dict[str, Any], max_items: int) -> list[dict[str, Any]]:
        """Every item a scan reads (boto3's paginator follows LastEvaluatedKey), at most `max_items`."""
        pages = self._aws.get_paginator("scan").paginate(**kwargs, PaginationConfig={"MaxItems": max_items})
        return [item for page in pages for item in page.get("Items", [])]

    def _items(self, kwargs: dict[str, Any], max_items: int) -> list[dict[str, Any]]:
        """Every item a query matches (boto3's paginator follows LastEvaluatedKey), at most `max_items`."""
        pages = self._aws.get_paginator("query").paginate(**kwargs, PaginationConfig={"MaxItems": max_items})
        return [item for page in pages for item in page.get("Items", [])]
