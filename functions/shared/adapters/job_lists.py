"""The job store's list queries (GSI1: every job, newest first) and the helpers both halves share."""

from __future__ import annotations

import hashlib
from typing import Any

from functions.shared import constants as c
from functions.shared.adapters.base import ClientAdapter
from functions.shared.adapters.dynamodb_codec import deserialize_item
from functions.shared.adapters.page_tokens import decode_token, encode_token
from functions.shared.domain.records import JobRecord
from functions.shared.domain.vocabulary import JobStatus

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("dynamodb:Query",)
LIST_PARTITION = "JOBS"
MAX_LIST_READS = 20


def job_key(job_id: str) -> dict[str, Any]:
    return {c.TABLE_PK: {"S": f"JOB#{job_id}"}, c.TABLE_SK: {"S": "JOB"}}


def list_keys(job_id: str, created_at: str) -> dict[str, str]:
    """The index attributes that list a job by creation time, and among unfinished jobs (removed at its end)."""
    shard = int(hashlib.sha256(job_id.encode()).hexdigest(), 16) % c.ACTIVE_SHARDS
    return {
        c.GSI1_PK: LIST_PARTITION,
        c.GSI1_SK: f"{created_at}#{job_id}",
        c.GSI2_PK: f"ACTIVE#{shard}",
        c.GSI2_SK: f"{created_at}#{job_id}",
    }


def record_of(item: dict[str, Any]) -> JobRecord:
    return JobRecord.model_validate(deserialize_item(item))


class JobLists(ClientAdapter):
    """Read side of ports.JobStore: lists of job records."""

    service = "dynamodb"

    def __init__(self, table_name: str, dynamodb: Any | None = None) -> None:
        super().__init__(dynamodb)
        self._table = table_name

    # -- lists --------------------------------------------------------------------------------
    def list_jobs(
        self, status: JobStatus | None, limit: int, next_token: str | None
    ) -> tuple[list[JobRecord], str | None]:
        """Newest jobs first, optionally of one status, a page at a time."""
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": c.GSI1_NAME,
            "KeyConditionExpression": "#gpk = :jobs",
            "ExpressionAttributeNames": {"#gpk": c.GSI1_PK},
            "ExpressionAttributeValues": {":jobs": {"S": LIST_PARTITION}},
            "ScanIndexForward": False,
        }
        if status:
            kwargs["FilterExpression"] = "#status = :status"
            kwargs["ExpressionAttributeNames"]["#status"] = "status"
            kwargs["ExpressionAttributeValues"][":status"] = {"S": status.value}
        if next_token:
            keys = {c.TABLE_PK, c.TABLE_SK, c.GSI1_PK, c.GSI1_SK}
            kwargs["ExclusiveStartKey"] = decode_token(next_token, keys, c.GSI1_PK, LIST_PARTITION)
        jobs: list[JobRecord] = []
        last = None
        # Limit bounds the items read before the status filter: read on until the page is full.
        for _ in range(MAX_LIST_READS):
            kwargs["Limit"] = limit - len(jobs)
            response = self._aws.query(**kwargs)
            jobs.extend(record_of(item) for item in response.get("Items", []))
            last = response.get("LastEvaluatedKey")
            if not last or len(jobs) >= limit:
                break
            kwargs["ExclusiveStartKey"] = last
        return jobs, (encode_token(last) if last else None)

    def active_jobs(self, max_items: int = 20000) -> list[JobRecord]:
        """Every unfinished job (the sweep's working set): the sparse index's shards, a page at a time."""
        found: list[JobRecord] = []
        for shard in range(c.ACTIVE_SHARDS):
            found += self._query(
                {
                    "TableName": self._table,
                    "IndexName": c.GSI2_NAME,
                    "KeyConditionExpression": "#apk = :shard",
                    "ExpressionAttributeNames": {"#apk": c.GSI2_PK},
                    "ExpressionAttributeValues": {":shard": {"S": f"ACTIVE#{shard}"}},
                },
                max_items - len(found),
            )
            if len(found) >= max_items:
                break
        return found

    def jobs_created_between(self, start: str, end: str, max_items: int = 5000) -> list[JobRecord]:
        """Jobs created in [start, end] (ISO strings compared as the sort key is), oldest first."""
        return self._query(
            {
                "TableName": self._table,
                "IndexName": c.GSI1_NAME,
                "KeyConditionExpression": "#gpk = :jobs AND #gsk BETWEEN :start AND :end",
                "ExpressionAttributeNames": {"#gpk": c.GSI1_PK, "#gsk": c.GSI1_SK},
                "ExpressionAttributeValues": {
                    ":jobs": {"S": LIST_PARTITION},
                    ":start": {"S": start},
                    ":end": {"S": end + "\uffff"},
                },
            },
            max_items,
        )

    def _query(self, kwargs: dict[str, Any], max_items: int) -> list[JobRecord]:
        """Every item a query matches (boto3's paginator follows LastEvaluatedKey), at most `max_items`."""
        pages = self._aws.get_paginator("query").paginate(**kwargs, PaginationConfig={"MaxItems": max_items})
        return [record_of(item) for page in pages for item in page.get("Items", [])]
