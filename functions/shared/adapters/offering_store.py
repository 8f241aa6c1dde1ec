"""The Capacity Block offerings GPU Pilot listed, in the table: a purchase names one of them, bought once.

DescribeCapacityBlockOfferings cannot be asked about one offering by its id, so what `GET /reservations/offerings`
listed is kept for an hour (DynamoDB's TTL deletes it later; reads check the time): a purchase holds the offering's
fee to its limit and asks EC2 again with the same question. Claiming a purchase is one conditional write, so two
requests to buy the same offering never both reach EC2.
"""

from __future__ import annotations

import time
from typing import Any

from botocore.exceptions import ClientError

from functions.shared import constants as c
from functions.shared.adapters.dynamodb_codec import deserialize_item, serialize
from functions.shared.adapters.job_store import is_conditional_failure
from functions.shared.adapters.table_store import _Table
from functions.shared.domain.reservations.offerings import BlockOffering

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem")
PARTITION = "BLOCK_OFFERINGS"
LISTED_SECONDS = 3600


def _key(offering_id: str) -> dict[str, Any]:
    return {c.TABLE_PK: {"S": PARTITION}, c.TABLE_SK: {"S": offering_id}}


class DynamoListedOfferings(_Table):
    """Implements ports.ListedOfferings: one item per listed offering, with the purchase claimed on it, if any."""

    def remember_offerings(self, offerings: list[BlockOffering]) -> None:
        expires = int(time.time()) + LISTED_SECONDS
        for offering in offerings:
            # A listing never clears the claim of a purchase under way: only an unclaimed offering is rewritten.
            self._put(
                _key(offering.offering_id) | {"offering": serialize(offering), c.TTL_ATTRIBUTE: {"N": str(expires)}},
                ConditionExpression="attribute_not_exists(claimed_at)",
            )

    def listed_offering(self, offering_id: str) -> BlockOffering | None:
        item = self._aws.get_item(TableName=self._table, Key=_key(offering_id), ConsistentRead=True).get("Item")
        if item is None or int(item[c.TTL_ATTRIBUTE]["N"]) <= time.time():
            return None
        return BlockOffering.model_validate(deserialize_item(item)["offering"])

    def claim_purchase(self, offering_id: str, at: str) -> bool:
        return self._update(
            offering_id,
            UpdateExpression="SET claimed_at = :at",
            ConditionExpression="attribute_exists(#pk) AND attribute_not_exists(claimed_at)",
            ExpressionAttributeNames={"#pk": c.TABLE_PK},
            ExpressionAttributeValues={":at": {"S": at}},
        )

    def release_purchase(self, offering_id: str) -> None:
        self._update(offering_id, UpdateExpression="REMOVE claimed_at")

    def _update(self, offering_id: str, **kwargs: Any) -> bool:
        """UpdateItem on the offering; False when its condition failed."""
        try:
            self._aws.update_item(TableName=self._table, Key=_key(offering_id), **kwargs)
        except ClientError as error:
            if is_conditional_failure(error):
                return False
            raise
        return True
