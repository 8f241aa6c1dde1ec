"""The pools' items in the table: one per pool under one partition (a few dozen pools at most: Batch allows 50
compute environments per region).

An item holds two things written by different hands, each conditionally and without touching the other:
the sweep's memory of the pool (`state`, versioned), and its use (`last_used_at`, written by each workflow that
claims the pool, and `retiring_since`, written by whoever starts its retirement). A claim fails once a
retirement started, and a retirement starts only if nobody claimed the pool since it was read. job_events also keeps
there Batch's last verdict on the job heading the pool's queue (`blocked_head`, `blocked_reason`), last writer wins:
whoever reads it asks Batch whether that job still waits for it.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from functions.shared import constants as c
from functions.shared.adapters.dynamodb_codec import deserialize_item, serialize
from functions.shared.adapters.job_store import is_conditional_failure
from functions.shared.adapters.table_store import _Table
from functions.shared.domain.pools.states import USE_FIELDS, PoolState

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("dynamodb:Query", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:GetItem")
POOLS_PARTITION = "POOLS"


def pools_partition(region: str | None = None) -> str:
    """The partition of a capacity region's pools (`POOLS#us-west-2`; the home region's: `POOLS`, as before regions):
    Batch names are per region, so two regions may each have a pool of one name."""
    return f"{POOLS_PARTITION}#{region}" if region else POOLS_PARTITION


class DynamoPoolStates(_Table):
    """Implements ports.PoolStates, for the pools of one region (`region`: a capacity region other than home)."""

    def __init__(self, table_name: str, dynamodb: Any | None = None, region: str | None = None) -> None:
        super().__init__(table_name, dynamodb)
        self._partition = pools_partition(region)

    def _key(self, pool: str) -> dict[str, Any]:
        return {c.TABLE_PK: {"S": self._partition}, c.TABLE_SK: {"S": pool}}

    def pool_states(self) -> dict[str, PoolState]:
        pages = self._aws.get_paginator("query").paginate(
            TableName=self._table,
            KeyConditionExpression="#pk = :p",
            ExpressionAttributeNames={"#pk": c.TABLE_PK},
            ExpressionAttributeValues={":p": {"S": self._partition}},
            ConsistentRead=True,
        )
        states = [self._state(deserialize_item(item)) for page in pages for item in page["Items"]]
        return {state.pool: state for state in states}

    @staticmethod
    def _state(item: dict[str, Any]) -> PoolState:
        memory = dict(item.get("state") or {"pool": item[c.TABLE_SK]})
        use = {field: item[field] for field in USE_FIELDS if item.get(field) is not None}
        return PoolState.model_validate(memory | use | {"version": int(item.get("version") or 0)})

    def save_pool_state(self, state: PoolState) -> bool:
        return self._update(
            state.pool,
            "SET #state = :state, version = :next",
            "attribute_not_exists(version) OR version = :read",
            {
                ":state": serialize(state.memory() | {"pool": state.pool}),
                ":next": {"N": str(state.version + 1)},
                ":read": {"N": str(state.version)},
            },
            {"#state": "state"},
        )

    def claim_pool(self, pool: str, key: str, at: str) -> bool:
        return self._update(
            pool,
            "SET last_used_at = :at, pool_key = :key",
            "attribute_not_exists(retiring_since)",
            {":at": {"S": at}, ":key": {"S": key}},
        )

    def start_retiring(self, pool: str, reason: str, at: str, last_used_at: str | None) -> bool:
        unclaimed = "last_used_at = :seen" if last_used_at else "attribute_not_exists(last_used_at)"
        values = {":at": {"S": at}, ":reason": {"S": reason}} | ({":seen": {"S": last_used_at}} if last_used_at else {})
        return self._update(
            pool,
            "SET retiring_since = :at, retire_reason = :reason",
            f"attribute_not_exists(retiring_since) AND {unclaimed}",
            values,
        )

    def finish_retiring(self, pool: str) -> None:
        try:
            self._aws.delete_item(
                TableName=self._table, Key=self._key(pool), ConditionExpression="attribute_exists(retiring_since)"
            )
        except ClientError as error:
            if not is_conditional_failure(error):
                raise

    def note_queue_verdict(self, pool: str, head: str, reason: str, at: str) -> None:
        self._aws.update_item(
            TableName=self._table,
            Key=self._key(pool),
            UpdateExpression="SET blocked_head = :head, blocked_reason = :reason, blocked_at = :at",
            ExpressionAttributeValues={":head": {"S": head}, ":reason": {"S": reason}, ":at": {"S": at}},
        )

    def queue_verdict(self, pool: str) -> tuple[str, str] | None:
        item = (
            self._aws.get_item(
                TableName=self._table, Key=self._key(pool), ProjectionExpression="blocked_head, blocked_reason"
            ).get("Item")
            or {}
        )
        if "blocked_head" not in item or "blocked_reason" not in item:
            return None
        return item["blocked_head"]["S"], item["blocked_reason"]["S"]

    def _update(
        self, pool: str, update: str, condition: str, values: dict[str, Any], names: dict[str, str] | None = None
    ) -> bool:
        """UpdateItem of the pool's item; False when its condition failed."""
        try:
            self._aws.update_item(
                TableName=self._table,
                Key=self._key(pool),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeValues=values,
                **({"ExpressionAttributeNames": names} if names else {}),
            )
        except ClientError as error:
            if is_conditional_failure(error):
                return False
            raise
        return True
