"""The rest of the table: the unavailable-offerings memory, the pools' states, the fleet's waste and the
health sweeps' reports."""

from __future__ import annotations

import math
import time
import zlib
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import ClientError

from functions.shared import constants as c
from functions.shared.adapters.base import ClientAdapter
from functions.shared.adapters.dynamodb_codec import deserialize_item, serialize
from functions.shared.adapters.job_store import is_conditional_failure
from functions.shared.domain.capacity.unavailable import UnavailableOffering
from functions.shared.domain.core import clock
from functions.shared.domain.core.clock import iso, parse_iso
from functions.shared.domain.core.errors import SweepNotFound
from functions.shared.domain.core.vocabulary import DiagnosisCategory, SweepStatus
from functions.shared.domain.cost.shares import Occupant, SharedInstance, occupy
from functions.shared.domain.cost.waste import InstanceWaste, WasteEntry, charge
from functions.shared.domain.diagnosis.findings import HealthReport

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query")
OFFERINGS_PARTITION = "UNAVAILABLE_OFFERINGS"
WASTE_PARTITION = "WASTE"
LATEST_KEY = {c.TABLE_PK: {"S": "HEALTH"}, c.TABLE_SK: {"S": "LATEST"}}
SWEEP_HISTORY_DAYS = 30
WASTE_WRITE_ATTEMPTS = 3
# An instance's ledger of shares is written by each of its attempts as it ends; jobs of one host end together.
SHARE_WRITE_ATTEMPTS = 8
SHARE_SUFFIX = "#shares"


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
    """Implements ports.OfferingMemory: one item per offering (its category, cause and time), deleted by DynamoDB's
    TTL."""

    def remember_unavailable(self, key: str, memory: UnavailableOffering) -> None:
        self._put(
            {
                c.TABLE_PK: {"S": OFFERINGS_PARTITION},
                c.TABLE_SK: {"S": key},
                "reason": {"S": memory.category.value},
                "cause": {"S": memory.cause},
                "at": {"S": memory.at},
                c.TTL_ATTRIBUTE: {"N": str(math.ceil(parse_iso(memory.expires_at).timestamp()))},
            }
        )

    def unavailable_offerings(self) -> dict[str, UnavailableOffering]:
        """Offerings remembered and not yet expired (TTL deletion lags by hours, so filter), with why."""
        pages = self._aws.get_paginator("query").paginate(
            TableName=self._table,
            KeyConditionExpression="#pk = :p",
            FilterExpression="#ttl > :now",
            ExpressionAttributeNames={"#pk": c.TABLE_PK, "#ttl": c.TTL_ATTRIBUTE},
            ExpressionAttributeValues={
                ":p": {"S": OFFERINGS_PARTITION},
                ":now": {"N": str(int(clock.now().timestamp()))},
            },
        )
        return {item[c.TABLE_SK]["S"]: _remembered(item) for page in pages for item in page.get("Items", [])}


def _remembered(item: dict[str, Any]) -> UnavailableOffering:
    """A stored memory; one written before causes were kept says its category only."""
    expires_at = iso(datetime.fromtimestamp(int(item[c.TTL_ATTRIBUTE]["N"]), tz=UTC))
    category = DiagnosisCategory(item["reason"]["S"])
    cause = item["cause"]["S"] if "cause" in item else category.value
    return UnavailableOffering(
        category=category, cause=cause, at=item["at"]["S"] if "at" in item else expires_at, expires_at=expires_at
    )


class DynamoWasteLedger(_Table):
    """Implements ports.WasteLedger: partition WASTE, one item per `day#instance` (the day it launched), whatever
    reasons the sweeps see it under; each write charges only the span not charged before, conditional on the
    version read, so concurrent sweeps never double what is recorded. An instance's unused share is an item of its
    own, `day#instance#shares` (the day it registered with ECS), restated by each attempt priced on it."""

    def record_waste(self, entry: WasteEntry) -> float:
        key = {c.TABLE_PK: {"S": WASTE_PARTITION}, c.TABLE_SK: {"S": f"{entry.day}#{entry.instance_id}"}}
        for _ in range(WASTE_WRITE_ATTEMPTS):
            stored = self._aws.get_item(TableName=self._table, Key=key, ConsistentRead=True).get("Item")
            version = int(stored["version"]["N"]) if stored else 0
            before = InstanceWaste.model_validate(deserialize_item(stored)["waste"]) if stored else None
            ledger, added = charge(before, entry)
            if not added:
                return 0.0
            if self._put_next_version(key, {"waste": serialize(ledger)}, version if stored else None):
                return added
        return 0.0  # other sweeps kept writing it first: what they did not charge, the next sweep will

    def _put_next_version(self, key: dict[str, Any], attributes: dict[str, Any], version: int | None) -> bool:
        """Write the item as the version after `version` (None: it must not exist yet), unless another writer moved it
        first; whether it was written."""
        item = key | attributes | {"version": {"N": str((version or 0) + 1)}}
        if version is None:
            return self._put(item, ConditionExpression="attribute_not_exists(#pk)",
                             ExpressionAttributeNames={"#pk": c.TABLE_PK})  # fmt: skip
        return self._put(item, ConditionExpression="version = :v",
                         ExpressionAttributeValues={":v": {"N": str(version)}})  # fmt: skip

    def record_share(self, instance: SharedInstance, key: str, attempt: Occupant) -> SharedInstance | None:
        sort_key = f"{instance.day}#{instance.instance_id}{SHARE_SUFFIX}"
        item_key = {c.TABLE_PK: {"S": WASTE_PARTITION}, c.TABLE_SK: {"S": sort_key}}
        for _ in range(SHARE_WRITE_ATTEMPTS):
            stored = self._aws.get_item(TableName=self._table, Key=item_key, ConsistentRead=True).get("Item")
            version = int(stored["version"]["N"]) if stored else 0
            before = SharedInstance.model_validate(deserialize_item(stored)["shared"]) if stored else instance
            ledger = occupy(before, key, attempt)
            if ledger is None:
                return None
            if self._put_next_version(item_key, {"shared": serialize(ledger)}, version if stored else None):
                return ledger
        return None  # the instance's other attempts kept writing first: its unused share misses this one

    def waste_between(self, day_from: str, day_to: str) -> list[WasteEntry]:
        pages = self._aws.get_paginator("query").paginate(
            TableName=self._table,
            KeyConditionExpression="#pk = :p AND #sk BETWEEN :from AND :to",
            ExpressionAttributeNames={"#pk": c.TABLE_PK, "#sk": c.TABLE_SK},
            ExpressionAttributeValues={
                ":p": {"S": WASTE_PARTITION}, ":from": {"S": day_from}, ":to": {"S": f"{day_to}#~"},
            },
        )  # fmt: skip
        return [entry for page in pages for item in page["Items"] for entry in _waste_entries(deserialize_item(item))]


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
        by_id = self._item(_sweep_key(report.sweep_id), report)
        if report.status != SweepStatus.COMPLETE:
            self._put(by_id)
            return
        latest = self._item(LATEST_KEY, report) | {"swept_at": {"S": report.swept_at}}
        newer: dict[str, Any] = {
            "ConditionExpression": "attribute_not_exists(swept_at) OR swept_at < :at",
            "ExpressionAttributeValues": {":at": {"S": report.swept_at}},
        }
        # Both in one call. A transaction writes both or neither: when a newer sweep is the latest already (or
        # another writer's conflict cancelled it), they are written one at a time, the latest as conditionally.
        try:
            self._aws.transact_write_items(
                TransactItems=[
                    {"Put": {"TableName": self._table, "Item": by_id}},
                    {"Put": {"TableName": self._table, "Item": latest, **newer}},
                ]
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                raise
            self._put(by_id)
            reasons = [reason.get("Code") for reason in error.response.get("CancellationReasons") or []]
            if "ConditionalCheckFailed" not in reasons:
                self._put(latest, **newer)

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


def _waste_entries(item: dict[str, Any]) -> list[WasteEntry]:
    """An instance's waste by reason, or the share of it its jobs left unused; or one entry, as written before
    waste was kept per instance."""
    if "waste" in item:
        return InstanceWaste.model_validate(item["waste"]).entries()
    if "shared" in item:
        return SharedInstance.model_validate(item["shared"]).entries()
    return [WasteEntry.model_validate(item["entry"])]


def _report(item: dict[str, Any]) -> HealthReport:
    """A stored report: compressed JSON, or (written before it was) a nested map."""
    if "report_z" in item:
        return HealthReport.model_validate_json(zlib.decompress(item["report_z"]["B"]))
    return HealthReport.model_validate(deserialize_item(item)["report"])
