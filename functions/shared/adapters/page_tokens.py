"""Opaque `next_token`s for list pages: DynamoDB's LastEvaluatedKey, checked on the way back in."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from functions.shared.domain.errors import InvalidPageToken


def encode_token(key: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(key, sort_keys=True).encode()).decode()


def decode_token(token: str, keys: set[str], partition_key: str, partition: str) -> dict[str, Any]:
    """The LastEvaluatedKey behind `token`; InvalidPageToken unless it is one of ours for `partition`."""
    try:
        decoded = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, binascii.Error) as error:
        raise InvalidPageToken(token) from error
    if (
        not isinstance(decoded, dict)
        or set(decoded) != keys
        or not all(isinstance(v, dict) and list(v) == ["S"] and isinstance(v["S"], str) for v in decoded.values())
        or decoded[partition_key]["S"] != partition
    ):
        raise InvalidPageToken(token)
    return decoded
