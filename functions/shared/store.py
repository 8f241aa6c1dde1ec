"""Data access: the job record and the unavailable-offerings memory in one DynamoDB table.

Every write that can race is conditional: job statuses only move forward (`status_rank`), an attempt is
created once, and a finished job is never reopened. ClientErrors become domain exceptions here.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import ClientError

from functions.shared import constants as c
from functions.shared.lifecycle import batch_rank, now_iso, status_rank
from functions.shared.models import JobStatus

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()
LIST_PARTITION = "JOBS"
MAX_LIST_READS = 20
OFFERINGS_PARTITION = "UNAVAILABLE_OFFERINGS"


class StoreError(Exception):
    """Base of the store's domain errors."""


class JobNotFound(StoreError):
    pass


class JobAlreadyExists(StoreError):
    pass


class InvalidPageToken(StoreError):
    pass


def _to_ddb(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: _to_ddb(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_to_ddb(v) for v in value]
    return value


def _from_ddb(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _from_ddb(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_ddb(v) for v in value]
    return value


def serialize(value: Any) -> dict[str, Any]:
    return _serializer.serialize(_to_ddb(value))  # type: ignore[no-any-return]


def deserialize_item(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _from_ddb(_deserializer.deserialize(v)) for k, v in item.items()}


def _is_conditional_failure(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


def job_key(job_id: str) -> dict[str, Any]:
    return {c.TABLE_PK: {"S": f"JOB#{job_id}"}, c.TABLE_SK: {"S": "JOB"}}


class JobStore:
    """The job record, read and written with conditional updates."""

    def __init__(self, dynamodb: Any, table_name: str) -> None:
        self._ddb = dynamodb
        self._table = table_name

    # -- jobs ---------------------------------------------------------------------------------
    def create_job(self, job_id: str, name: str, request: dict[str, Any]) -> dict[str, Any]:
        """Write a new SUBMITTED job; fails with JobAlreadyExists rather than overwrite one."""
        at = now_iso()
        record = {
            "job_id": job_id,
            "name": name,
            "status": JobStatus.SUBMITTED.value,
            "status_rank": status_rank(JobStatus.SUBMITTED),
            "request": request,
            "attempts": {},
            "waits": {},
            "timeline": [{"status": JobStatus.SUBMITTED.value, "at": at}],
            "created_at": at,
            "updated_at": at,
            c.GSI1_PK: LIST_PARTITION,
            c.GSI1_SK: f"{at}#{job_id}",
        }
        item = {k: serialize(v) for k, v in record.items()} | job_key(job_id)
        try:
            self._ddb.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(#pk)",
                ExpressionAttributeNames={"#pk": c.TABLE_PK},
            )
        except ClientError as error:
            if _is_conditional_failure(error):
                raise JobAlreadyExists(job_id) from error
            raise
        return record

    def get_job(self, job_id: str) -> dict[str, Any]:
        """The job record; JobNotFound when there is none."""
        response = self._ddb.get_item(TableName=self._table, Key=job_key(job_id), ConsistentRead=True)
        if "Item" not in response:
            raise JobNotFound(job_id)
        return deserialize_item(response["Item"])

    def list_jobs(
        self, status: str | None, limit: int, next_token: str | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Newest jobs first, optionally of one status, a page at a time."""
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": c.GSI1_NAME,
            "KeyConditionExpression": "#gpk = :jobs",
            "ExpressionAttributeNames": {"#gpk": c.GSI1_PK},
            "ExpressionAttributeValues": {":jobs": {"S": LIST_PARTITION}},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if status:
            kwargs["FilterExpression"] = "#status = :status"
            kwargs["ExpressionAttributeNames"]["#status"] = "status"
            kwargs["ExpressionAttributeValues"][":status"] = {"S": status}
        if next_token:
            kwargs["ExclusiveStartKey"] = _decode_token(next_token)
        jobs: list[dict[str, Any]] = []
        # Limit bounds the items read before the status filter: read on until the page is full.
        for _ in range(MAX_LIST_READS):
            kwargs["Limit"] = limit - len(jobs)
            response = self._ddb.query(**kwargs)
            jobs.extend(deserialize_item(item) for item in response.get("Items", []))
            last = response.get("LastEvaluatedKey")
            if not last or len(jobs) >= limit:
                break
            kwargs["ExclusiveStartKey"] = last
        return jobs, (_encode_token(last) if last else None)

    def set_execution_arn(self, job_id: str, execution_arn: str) -> None:
        self._ddb.update_item(
            TableName=self._table,
            Key=job_key(job_id),
            UpdateExpression="SET execution_arn = :arn",
            ExpressionAttributeValues={":arn": {"S": execution_arn}},
        )

    def advance(
        self, job_id: str, status: JobStatus, attempt: int, at: str | None = None, fields: dict[str, Any] | None = None
    ) -> bool:
        """Move the job to `status` (appending it to the timeline) unless it is already past it."""
        at = at or now_iso()
        rank = status_rank(status, attempt)
        names = {"#status": "status"}
        values = {
            ":status": serialize(status.value),
            ":rank": serialize(rank),
            ":entry": serialize([{"status": status.value, "at": at}]),
            ":now": serialize(now_iso()),
        }
        sets = [
            "#status = :status",
            "status_rank = :rank",
            "timeline = list_append(timeline, :entry)",
            "updated_at = :now",
        ]
        for index, (name, value) in enumerate((fields or {}).items()):
            names[f"#f{index}"] = name
            values[f":f{index}"] = serialize(value)
            sets.append(f"#f{index} = :f{index}")
        try:
            self._ddb.update_item(
                TableName=self._table,
                Key=job_key(job_id),
                UpdateExpression="SET " + ", ".join(sets),
                ConditionExpression="attribute_exists(#pk) AND status_rank < :rank",
                ExpressionAttributeNames=names | {"#pk": c.TABLE_PK},
                ExpressionAttributeValues=values,
            )
        except ClientError as error:
            if _is_conditional_failure(error):
                return False
            raise
        return True

    def finish(
        self, job_id: str, status: JobStatus, at: str | None = None, fields: dict[str, Any] | None = None
    ) -> bool:
        """Record the job's final status once; a cancelled or finished job keeps its outcome."""
        return self.advance(job_id, status, attempt=0, at=at, fields=fields)

    # -- attempts -----------------------------------------------------------------------------
    def put_attempt(self, job_id: str, attempt: int, fields: dict[str, Any]) -> dict[str, Any]:
        """Create attempt `attempt` once; returns the stored attempt (the existing one on a retry)."""
        try:
            response = self._ddb.update_item(
                TableName=self._table,
                Key=job_key(job_id),
                UpdateExpression="SET attempts.#n = :attempt, updated_at = :now",
                ConditionExpression="attribute_exists(#pk) AND attribute_not_exists(attempts.#n)",
                ExpressionAttributeNames={"#n": str(attempt), "#pk": c.TABLE_PK},
                ExpressionAttributeValues={":attempt": serialize(fields), ":now": serialize(now_iso())},
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if _is_conditional_failure(error):
                return dict(self.get_job(job_id)["attempts"][str(attempt)])
            raise
        return dict(deserialize_item(response["Attributes"])["attempts"][str(attempt)])

    def update_attempt(
        self, job_id: str, attempt: int, fields: dict[str, Any], if_missing: dict[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """Set fields on an attempt; with a `batch_status`, only if it moves the attempt forward.
        `if_missing` fields are set only where the attempt has none yet.

        Returns the whole record after the write, or None when the write was stale or duplicate.
        """
        names = {"#n": str(attempt), "#pk": c.TABLE_PK}
        values: dict[str, Any] = {":now": serialize(now_iso())}
        sets = ["updated_at = :now"]
        for index, (name, value) in enumerate((if_missing or {}).items()):
            if value is None:
                continue
            names[f"#m{index}"] = name
            values[f":m{index}"] = serialize(value)
            sets.append(f"attempts.#n.#m{index} = if_not_exists(attempts.#n.#m{index}, :m{index})")
        condition = "attribute_exists(#pk) AND attribute_exists(attempts.#n)"
        if "batch_status" in fields:
            fields = fields | {"batch_rank": batch_rank(fields["batch_status"])}
            values[":rank"] = serialize(fields["batch_rank"])
            condition += " AND (attribute_not_exists(attempts.#n.batch_rank) OR attempts.#n.batch_rank < :rank)"
        for index, (name, value) in enumerate(fields.items()):
            if value is None:
                continue
            names[f"#f{index}"] = name
            values[f":f{index}"] = serialize(value)
            sets.append(f"attempts.#n.#f{index} = :f{index}")
        try:
            response = self._ddb.update_item(
                TableName=self._table,
                Key=job_key(job_id),
                UpdateExpression="SET " + ", ".join(sets),
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if _is_conditional_failure(error):
                return None
            raise
        return deserialize_item(response["Attributes"])

    # -- waits --------------------------------------------------------------------------------
    def store_wait(self, job_id: str, phase: str, attempt: int, token: str) -> dict[str, Any]:
        """Park the workflow's task token for `phase`; returns the record as it is after the write."""
        response = self._ddb.update_item(
            TableName=self._table,
            Key=job_key(job_id),
            UpdateExpression="SET waits.#phase = :wait",
            ConditionExpression="attribute_exists(#pk)",
            ExpressionAttributeNames={"#phase": phase, "#pk": c.TABLE_PK},
            ExpressionAttributeValues={":wait": serialize({"attempt": attempt, "token": token})},
            ReturnValues="ALL_NEW",
        )
        return deserialize_item(response["Attributes"])

    def clear_wait(self, job_id: str, phase: str, token: str) -> None:
        """Forget a spent token, unless a newer wait has replaced it meanwhile."""
        try:
            self._ddb.update_item(
                TableName=self._table,
                Key=job_key(job_id),
                UpdateExpression="REMOVE waits.#phase",
                ConditionExpression="waits.#phase.#token = :token",
                ExpressionAttributeNames={"#phase": phase, "#token": "token"},
                ExpressionAttributeValues={":token": {"S": token}},
            )
        except ClientError as error:
            if not _is_conditional_failure(error):
                raise

    def active_jobs(self, statuses: tuple[str, ...], max_items: int = 500) -> list[dict[str, Any]]:
        """Jobs in one of `statuses`, newest first, at most `max_items` (the sweep's working set)."""
        values = {f":s{i}": {"S": status} for i, status in enumerate(statuses)}
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": c.GSI1_NAME,
            "KeyConditionExpression": "#gpk = :jobs",
            "FilterExpression": f"#status IN ({', '.join(values)})",
            "ExpressionAttributeNames": {"#gpk": c.GSI1_PK, "#status": "status"},
            "ExpressionAttributeValues": {":jobs": {"S": LIST_PARTITION}} | values,
            "ScanIndexForward": False,
        }
        return self._query(kwargs, max_items)

    def jobs_created_between(self, start: str, end: str, max_items: int = 5000) -> list[dict[str, Any]]:
        """Jobs created in [start, end] (ISO strings compared as the sort key is), oldest first."""
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": c.GSI1_NAME,
            "KeyConditionExpression": "#gpk = :jobs AND #gsk BETWEEN :start AND :end",
            "ExpressionAttributeNames": {"#gpk": c.GSI1_PK, "#gsk": c.GSI1_SK},
            "ExpressionAttributeValues": {
                ":jobs": {"S": LIST_PARTITION},
                ":start": {"S": start},
                ":end": {"S": end + "\uffff"},
            },
        }
        return self._query(kwargs, max_items)

    # -- health -------------------------------------------------------------------------------
    def save_health(self, report: dict[str, Any]) -> None:
        """Keep the latest sweep's report (one item, overwritten: history lives in CloudWatch)."""
        item = {"report": serialize(report), c.TABLE_PK: {"S": "HEALTH"}, c.TABLE_SK: {"S": "LATEST"}}
        self._ddb.put_item(TableName=self._table, Item=item)

    def latest_health(self) -> dict[str, Any] | None:
        response = self._ddb.get_item(
            TableName=self._table, Key={c.TABLE_PK: {"S": "HEALTH"}, c.TABLE_SK: {"S": "LATEST"}}
        )
        return deserialize_item(response["Item"])["report"] if "Item" in response else None

    # -- unavailable offerings ----------------------------------------------------------------
    def remember_unavailable(self, key: str, reason: str, ttl_seconds: int) -> None:
        """Remember an offering ('capacity:type:zone') as unavailable until the TTL passes."""
        expires = int(time.time()) + ttl_seconds
        self._ddb.put_item(
            TableName=self._table,
            Item={
                c.TABLE_PK: {"S": OFFERINGS_PARTITION},
                c.TABLE_SK: {"S": key},
                "reason": {"S": reason},
                c.TTL_ATTRIBUTE: {"N": str(expires)},
            },
        )

    def unavailable_offerings(self) -> set[str]:
        """Offerings remembered as unavailable and not yet expired (TTL deletion lags, so filter)."""
        now = int(time.time())
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "#pk = :p",
            "FilterExpression": "#ttl > :now",
            "ExpressionAttributeNames": {"#pk": c.TABLE_PK, "#ttl": c.TTL_ATTRIBUTE},
            "ExpressionAttributeValues": {":p": {"S": OFFERINGS_PARTITION}, ":now": {"N": str(now)}},
        }
        return {item[c.TABLE_SK] for item in self._query(kwargs)}

    def _query(self, kwargs: dict[str, Any], max_items: int | None = None) -> list[dict[str, Any]]:
        """Every item a query matches (boto3's paginator follows LastEvaluatedKey), at most `max_items`."""
        config = {"MaxItems": max_items} if max_items else {}
        pages = self._ddb.get_paginator("query").paginate(**kwargs, PaginationConfig=config)
        return [deserialize_item(item) for page in pages for item in page.get("Items", [])]


def _encode_token(key: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(key, sort_keys=True).encode()).decode()


def _decode_token(token: str) -> dict[str, Any]:
    try:
        decoded = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, binascii.Error) as error:
        raise InvalidPageToken(token) from error
    keys = {c.TABLE_PK, c.TABLE_SK, c.GSI1_PK, c.GSI1_SK}
    if (
        not isinstance(decoded, dict)
        or set(decoded) != keys
        or not all(isinstance(v, dict) and list(v) == ["S"] and isinstance(v["S"], str) for v in decoded.values())
        or decoded[c.GSI1_PK]["S"] != LIST_PARTITION
    ):
        raise InvalidPageToken(token)
    return decoded


__all__ = ["InvalidPageToken", "JobAlreadyExists", "JobNotFound", "JobStore"]
