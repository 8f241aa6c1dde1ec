"""Opaque `next_token`s for list pages: the position in the list's order where the next page begins.

A list read from several partitions at once (a sharded index) has no single LastEvaluatedKey to resume
from; its order does: each page ends at a position, and the next takes what comes after it in every shard.
"""

from __future__ import annotations

import base64
import binascii
import json
import re

from functions.shared.domain.core.errors import InvalidPageToken

# A job's place in the job list: its creation time and its id (unique, so no two jobs share a place).
LIST_POSITION = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z#[\x21-\x7e]{1,128}$")


def list_position(created_at: str, job_id: str) -> str:
    """A job's place in the job list, as its index sorts it (ISO times sort as text)."""
    return f"{created_at}#{job_id}"


def encode_token(position: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"after": position}).encode()).decode()


def decode_token(token: str) -> str:
    """The position behind `token`; InvalidPageToken unless it is one this API issued."""
    try:
        decoded = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, binascii.Error) as error:
        raise InvalidPageToken(token) from error
    if (
        not isinstance(decoded, dict)
        or set(decoded) != {"after"}
        or not isinstance(decoded["after"], str)
        or not LIST_POSITION.fullmatch(decoded["after"])
    ):
        raise InvalidPageToken(token)
    return decoded["after"]
