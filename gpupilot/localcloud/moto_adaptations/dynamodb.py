"""DynamoDB: as DynamoDB pages an index, and faster, with every answer unchanged.

13. Speed, answers unchanged (sampled under load by `make bench`'s local_e2e):

DynamoDB item answers. moto turns an item operation's result into DynamoDB's JSON wire format
   (`moto.dynamodb.models.utilities.dynamo_to_dict`) and then hands it to its generic serializer, which
   walks the operation's output shape member by member, trying several spellings of every attribute name,
   to produce the same JSON. Here the wire-format result's output-shape members are JSON-encoded directly
   (binary values base64, as the serializer encodes them); any other result keeps moto's path.

tests/integration/test_moto_speed.py checks that each speed-up answers exactly what moto answers without it.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from gpupilot.localcloud.moto_adaptations.patches import Patches

# DynamoDB operations whose result moto builds with dynamo_to_dict: plain JSON values, bytes for binary.
ITEM_OPERATIONS = frozenset(
    {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"}
)


DYNAMODB_CONTENT_TYPE = "application/x-amz-json-1.0"


def _binary(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    raise TypeError(f"not JSON: {type(value).__name__}")


def wire_json(result: dict[str, Any]) -> str | None:
    """`result` as DynamoDB's JSON answer, or None when it holds anything but wire-format values."""
    try:
        return json.dumps({k: v for k, v in result.items() if v is not None}, default=_binary)
    except (TypeError, ValueError):
        return None


def direct_dynamodb_item_answers(patches: Patches) -> None:
    from moto.dynamodb.responses import DynamoResult

    serialize = DynamoResult.execute_result

    def execute_result(self: Any, context: Any) -> Any:
        operation = context.operation_model
        body = None
        if operation.name in ITEM_OPERATIONS and isinstance(self.result, dict):
            # Only the output shape's members: moto's serializer drops the rest (DeleteItem's ConsumedCapacityUnits)
            body = wire_json({k: v for k, v in self.result.items() if k in operation.output_shape.members})
        if body is None:
            return serialize(self, context)
        return 200, {"Content-Type": DYNAMODB_CONTENT_TYPE}, body

    patches.replace(DynamoResult, "execute_result", execute_result)
