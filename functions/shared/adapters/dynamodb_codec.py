"""Records to DynamoDB attribute values and back: floats as Decimal, None left out, numbers exact."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from pydantic import BaseModel

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def _to_ddb(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return _to_ddb(value.model_dump(mode="json"))
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {str(k): _to_ddb(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_to_ddb(v) for v in value]
    if hasattr(value, "value") and isinstance(getattr(value, "value", None), str):  # enums
        return value.value
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
    """One DynamoDB attribute value (a model is stored as its JSON form)."""
    return _serializer.serialize(_to_ddb(value))  # type: ignore[no-any-return]


def deserialize_item(item: dict[str, Any]) -> dict[str, Any]:
    """A whole item as plain Python values."""
    return {k: _from_ddb(_deserializer.deserialize(v)) for k, v in item.items()}
