"""The rest of the table: the unavailable-offerings memory, the pools' states, the fleet's waste and the
health sweeps' reports."""

from __future__ import annotations

import time
import zlib
from typing import Any

from botocore.exceptions import ClientError

from functions.shared import constants as c
from functions.shared.adapters.base import ClientAdapter
from functions.shared.adapters.dynamodb_codec import deserialize_item, serialize
from functions.shared.adapters.job_store import is_conditional_failure
from functions.shared.domain.cost import usd_sum
from functions.shared.domain.errors import SweepNotFound
from functions.shared.domain.views import HealthReport
from functions.shared.domain.vocabulary import SweepStatus
from functions.shared.domain.waste import WasteEntry

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query")
OFFERINGS_PARTITION = "UNAVAILABLE_OFFERINGS"
WASTE_PARTITION = "WASTE"
LATEST_KEY = {c.TABLE_PK: {"S": "HEALTH"}, c.TABLE_SK: {"S": "LATEST"}}
SWEEP_HISTORY_DAYS = 30


def _sweep_key(sweep_id: str) -> dict[str, Any]:
    return {c.TABLE_PK: {"S": f"SWEEP#{sweep_id}"}, c.TABLE_SK: {"S": "REPORT"}}


class _Table(ClientAdapter):
    service = "dynamodb"

    def __init__(self, table_name: str, dynamodb: Any | None = None) -> None:
        super().__init__(dynamodb)
        self._table = table_name

    def _put(self, item: dict[str, Any], **condition: Any) -> bool:
        """PutItem; False when its condition failed."""
        try:
            self._aws.put_item(TableName=self._table, Item=item, **condition)
        except ClientError as error:
            if is_conditional_failure(error):
                return False
            raise
        return True


class DynamoOfferingMemory(_Table):
    """Implements ports.OfferingMemory: one item per offering, deleted by DynamoDB's TTL."""

    def remember_unavailable(self, key: str, reason: str, ttl_seconds: int) -> None:
        self._put(
            {
                c.TABLE_PK: {"S": OFFERINGS_PARTITION},
                c.TABLE_SK: {"S": key},
                "reason": {"S": reason},
                c.TTL_ATTRIBUTE: {"N": str(int(time.time()) + ttl_seconds)},
            }
        )

    def unavailable_offerings(self) -> set[str]:
        """Offerings remembered and not yet expired (TTL deletion lags by hours, so filter)."""
        pages = self._aws.get_paginator("query").paginate(
            TableName=self._table,
            KeyConditionExpression="#pk = :p",
            FilterExpression="#ttl > :now",
            ExpressionAttributeNames={"#pk": c.TABLE_PK, "#ttl": c.TTL_ATTRIBUTE},
            ExpressionAttributeValues={":p": {"S": OFFERINGS_PARTITION}, ":now": {"N": str(int(time.time()))}},
        )
        return {item[c.TABLE_SK]["S"] for page in pages for item in page.get("Items", [])}


class DynamoWasteLedger(_Table):
    """Implements ports.WasteLedger: partition WASTE, one item per `day#instance#reason`, each rewritten
    only over a smaller one (conditional), so concurrent sweeps never lower or double what is recorded."""

    def record_waste(self, entry: WasteEntry) -> float:
        key = {c.TABLE_PK: {"S": WASTE_PARTITION}, c.TABLE_SK: {"S": f"{entry.day}#{entry.instance_id}#{entry.reason}"}}
        try:
            answer = self._aws.put_item(
                TableName=self._table,
                Item=key | {"entry": serialize(entry), "usd": serialize(entry.usd)},
                ConditionExpression="attribute_not_exists(#pk) OR usd < :usd",
                ExpressionAttributeNames={"#pk": c.TABLE_PK},
                ExpressionAttributeValues={":usd": serialize(entry.usd)},
                ReturnValues="ALL_OLD",
            )
        except ClientError as error:
            if is_conditional_failure(error):
                return 0.0
            raise
        before = deserialize_item(answer.get("Attributes") or {}).get("usd", 0.0)
        return usd_sum([entry.usd, -float(before)])

    def waste_between(self, day_from: str, day_to: str) -> list[WasteEntry]:
        pages = self._aws.get_paginator("query").paginate(
            TableName=self._table,
            KeyConditionExpression="#pk = :p AND #sk BETWEEN :from AND :to",
            ExpressionAttributeNames={"#pk": c.TABLE_PK, "#sk": c.TABLE_SK},
            ExpressionAttributeValues={
                ":p": {"S": WASTE_PARTITION}, ":from": {"S": day_from}, ":to": {"S": f"{day_to}#~"},
            },
        )  # fmt: skip
        return [WasteEntry.model_validate(deserialize_item(i)["entry"]) for page in pages for i in page["Items"]]


class DynamoHealthStore(_Table):
    """Implements ports.HealthStore: a report per sweep (kept SWEEP_HISTORY_DAYS) and a copy of the latest."""

    def start_sweep(self, sweep_id: str) -> None:
        report = HealthReport(sweep_id=sweep_id, status=SweepStatus.RUNNING, swept_at=None, findings=[], summary={})
        self._put(self._item(_sweep_key(sweep_id), report), ConditionExpression="attribute_not_exists(#pk)",
                  ExpressionAttributeNames={"#pk": c.TABLE_PK})  # fmt: skip

    def save_report(self, report: HealthReport) -> None:
        """Store the sweep's report, and make it the latest unless a newer sweep finished first (a FAILED
        sweep is kept by its id only: the latest findings stay the last complete sweep's)."""
        assert report.sweep_id is not None and report.swept_at is not None
        self._put(self._item(_sweep_key(report.sweep_id), report))
        if report.status != SweepStatus.COMPLETE:
            return
        self._put(
            self._item(LATEST_KEY, report) | {"swept_at": {"S": report.swept_at}},
            ConditionExpression="attribute_not_exists(swept_at) OR swept_at < :at",
            ExpressionAttributeValues={":at": {"S": report.swept_at}},
        )

    def get_report(self, sweep_id: str) -> HealthReport:
        response = self._aws.get_item(TableName=self._table, Key=_sweep_key(sweep_id), ConsistentRead=True)
        if "Item" not in response:
            raise SweepNotFound(sweep_id)
        return _report(response["Item"])

    def latest_report(self) -> HealthReport | None:
        response = self._aws.get_item(TableName=self._table, Key=LATEST_KEY, ConsistentRead=True)
        return _report(response["Item"]) if "Item" in response else None

    @staticmethod
    def _item(key: dict[str, Any], report: HealthReport) -> dict[str, Any]:
        expires = int(time.time()) + SWEEP_HISTORY_DAYS * 86400
        # One compressed JSON attribute: a report names up to 50 jobs per finding, which as a nested map is
        # slow to marshal and, with many pools, could near DynamoDB's 400 KB item limit.
        blob = zlib.compress(report.model_dump_json(exclude_none=True).encode())
        return key | {"report_z": {"B": blob}, c.TTL_ATTRIBUTE: {"N": str(expires)}}


def _report(item: dict[str, Any]) -> HealthReport:
    """A stored report: compressed JSON, or (written before it was) a nested map."""
    if "report_z" in item:
        return HealthReport.model_validate_json(zlib.decompress(item["report_z"]["B"]))
    return HealthReport.model_validate(deserialize_item(item)["report"])
