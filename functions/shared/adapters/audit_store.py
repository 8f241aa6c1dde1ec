"""The audit log on DynamoDB: a partition per day (AUDIT#<YYYY-MM-DD>), a line per item sorted by time, each kept
AUDIT_RETENTION_DAYS (the table's TTL)."""

from __future__ import annotations

import uuid
from datetime import date, timedelta
from typing import Any

from functions.shared import constants as c
from functions.shared.adapters.base import ClientAdapter
from functions.shared.adapters.dynamodb_codec import deserialize_item, serialize
from functions.shared.domain.core.clock import parse_iso
from functions.shared.domain.teams.audit import AUDIT_RETENTION_DAYS, AuditEvent

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("dynamodb:PutItem", "dynamodb:Query")
FIELDS = tuple(AuditEvent.model_fields)


class DynamoAuditLog(ClientAdapter):
    """Implements ports.teams.AuditLog."""

    service = "dynamodb"

    def __init__(self, table_name: str, dynamodb: Any | None = None) -> None:
        super().__init__(dynamodb)
        self._table = table_name

    def append(self, event: AuditEvent) -> None:
        expires = int(parse_iso(event.at).timestamp()) + AUDIT_RETENTION_DAYS * 86400
        document = event.model_dump(mode="json")
        item = {k: serialize(v) for k, v in document.items() if v is not None and v != {}} | {
            c.TABLE_PK: {"S": f"AUDIT#{event.at[:10]}"},
            c.TABLE_SK: {"S": f"{event.at}#{uuid.uuid4().hex[:12]}"},
            c.TTL_ATTRIBUTE: {"N": str(expires)},
        }
        self._aws.put_item(TableName=self._table, Item=item)

    def events(self, first_day: str, last_day: str, limit: int) -> tuple[list[AuditEvent], bool]:
        found: list[AuditEvent] = []
        day = date.fromisoformat(first_day)
        while day <= date.fromisoformat(last_day):
            pages = self._aws.get_paginator("query").paginate(
                TableName=self._table,
                KeyConditionExpression="#pk = :day",
                ExpressionAttributeNames={"#pk": c.TABLE_PK},
                ExpressionAttributeValues={":day": {"S": f"AUDIT#{day.isoformat()}"}},
                PaginationConfig={"MaxItems": limit - len(found) + 1},
            )
            for page in pages:
                for item in page.get("Items", []):
                    data = deserialize_item(item)
                    found.append(AuditEvent.model_validate({k: data[k] for k in FIELDS if k in data}))
            if len(found) > limit:
                return found[:limit], True
            day += timedelta(days=1)
        return found, False
