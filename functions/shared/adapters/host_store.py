"""The evidence against GPU hosts and the hosts quarantined, in the table: one partition, a few items per bad host.

Host-side failures are rare (a healthy fleet writes none), so one partition holds them all; each failure is keyed by
its host, Batch job and attempt, so a replayed event writes nothing new, and expires with the table's TTL.
"""

from __future__ import annotations

import time
from typing import Any

from functions.shared import constants as c
from functions.shared.adapters.table_store import _Table
from functions.shared.domain.core.clock import parse_iso
from functions.shared.domain.hosts.evidence import HostFault
from functions.shared.domain.hosts.quarantine import QuarantineRecord

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("dynamodb:PutItem", "dynamodb:Query")
HOSTS_PARTITION = "HOSTS"
FAULT, SWEEP, QUARANTINE = "FAULT#", "SWEEP#", "QUARANTINE#"
QUARANTINE_HISTORY_DAYS = 30


def _expires(seconds: float) -> dict[str, str]:
    return {"N": str(int(time.time() + seconds))}


class DynamoHostLedger(_Table):
    """Implements ports.HostLedger."""

    def _key(self, sort_key: str) -> dict[str, Any]:
        return {c.TABLE_PK: {"S": HOSTS_PARTITION}, c.TABLE_SK: {"S": sort_key}}

    def _create(self, item: dict[str, Any]) -> bool:
        return self._put(
            item, ConditionExpression="attribute_not_exists(#pk)", ExpressionAttributeNames={"#pk": c.TABLE_PK}
        )

    def record_fault(self, fault: HostFault, ttl_seconds: float) -> bool:
        key = self._key(f"{FAULT}{fault.container_instance_arn}#{fault.batch_job_id}#{fault.attempt}")
        item = key | {"at": {"S": fault.at}, "fault": {"S": fault.model_dump_json()}}
        return self._create(item | {c.TTL_ATTRIBUTE: _expires(ttl_seconds)})

    def faults(self, since: str) -> list[HostFault]:
        items = self._query(FAULT, since)
        return [HostFault.model_validate_json(item["fault"]["S"]) for item in items]

    def claim_sweep(self, container_instance_arn: str, ttl_seconds: float) -> bool:
        return self._create(self._key(f"{SWEEP}{container_instance_arn}") | {c.TTL_ATTRIBUTE: _expires(ttl_seconds)})

    def record_quarantine(self, record: QuarantineRecord) -> bool:
        return self._create(self._quarantine_item(record))

    def update_quarantine(self, record: QuarantineRecord) -> None:
        self._put(self._quarantine_item(record))

    def quarantines(self, since: str) -> list[QuarantineRecord]:
        items = self._query(QUARANTINE, since)
        return [QuarantineRecord.model_validate_json(item["record"]["S"]) for item in items]

    def ledger(self, since: str) -> tuple[list[HostFault], list[QuarantineRecord]]:
        # The sort keys run FAULT# < QUARANTINE# < SWEEP#: one range holds both kinds and none of the claims.
        items = self._query(FAULT, since, until=QUARANTINE + "\uffff")
        faults = [i for i in items if i[c.TABLE_SK]["S"].startswith(FAULT)]
        quarantines = [i for i in items if i[c.TABLE_SK]["S"].startswith(QUARANTINE)]
        return (
            [HostFault.model_validate_json(item["fault"]["S"]) for item in faults],
            [QuarantineRecord.model_validate_json(item["record"]["S"]) for item in quarantines],
        )

    def _quarantine_item(self, record: QuarantineRecord) -> dict[str, Any]:
        return self._key(f"{QUARANTINE}{record.instance}") | {
            "at": {"S": record.at},
            "record": {"S": record.model_dump_json()},
            c.TTL_ATTRIBUTE: _expires(QUARANTINE_HISTORY_DAYS * 86400),
        }

    def _query(self, prefix: str, since: str, until: str | None = None) -> list[dict[str, Any]]:
        """The partition's items of one kind (or, `until` given, of the sort keys from `prefix` to `until`), ended at
        `since` or later (TTL deletion lags, so filter)."""
        condition = "begins_with(#sk, :kind)" if until is None else "#sk BETWEEN :kind AND :until"
        values = {":p": {"S": HOSTS_PARTITION}, ":kind": {"S": prefix}} | ({":until": {"S": until}} if until else {})
        pages = self._aws.get_paginator("query").paginate(
            TableName=self._table,
            KeyConditionExpression=f"#pk = :p AND {condition}",
            ExpressionAttributeNames={"#pk": c.TABLE_PK, "#sk": c.TABLE_SK},
            ExpressionAttributeValues=values,
            ConsistentRead=True,
        )
        cutoff = parse_iso(since)
        return [item for page in pages for item in page["Items"] if parse_iso(item["at"]["S"]) >= cutoff]
