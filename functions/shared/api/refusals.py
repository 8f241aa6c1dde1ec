"""A refused request body in the API's own words: a JSON body read so that a number Python will not read is a
refusal naming its field, and pydantic's errors said without a library's prefix or a regular expression."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from functions.shared.domain.requests.job_request import JOB_NAME_PATTERN
from functions.shared.domain.requests.references import ENVIRONMENT_VALUE, REGION_NAME, RESERVATION_ID
from functions.shared.domain.reservations.views import OFFERING_ID

# What each pattern of a request model asks, in words (a test holds every pattern of the bodies to this table).
PATTERN_WORDS = {
    JOB_NAME_PATTERN: "must be 1-128 of letters, digits, '_' and '-'",
    ENVIRONMENT_VALUE.pattern: "must not contain NUL (a process's arguments are NUL-terminated strings)",
    REGION_NAME: "must be an AWS region's name, e.g. us-east-1",
    RESERVATION_ID: "must be a Capacity Reservation's id: cr- and 8 or 17 hexadecimal digits",
    OFFERING_ID: "must be a Capacity Block offering's id: cb- and up to 64 lower-case letters or digits",
}
# Python reads integers of at most this many digits (sys.get_int_max_str_digits); no field takes one that long.
MAX_INTEGER_DIGITS = 4300


class NumberTooLong(Exception):
    """A JSON integer of more digits than any field takes; `field` is its dotted path in the body."""

    def __init__(self, field: str, digits: int) -> None:
        super().__init__(f"{field}: a number of {digits} digits is beyond any this API takes")
        self.field = field
        self.message = str(self)


class _LongInteger(str):
    """An integer literal too long to read, kept as its text until its place in the body is known."""


def read_json(raw: str) -> Any:
    """The JSON document in `raw` (ValueError when it is not JSON; NumberTooLong naming the field of an integer too
    long to read, rather than Python's own words about its limit)."""

    def integer(text: str) -> int | _LongInteger:
        return _LongInteger(text) if len(text.lstrip("-")) > MAX_INTEGER_DIGITS else int(text)

    document = json.loads(raw, parse_int=integer)
    found = _long_integer(document, ())
    if found is not None:
        path, digits = found
        raise NumberTooLong(".".join(path) or "body", digits)
    return document


def _long_integer(value: Any, path: tuple[str, ...]) -> tuple[tuple[str, ...], int] | None:
    """The path of the first integer too long to read in `value`, and its number of digits."""
    if isinstance(value, _LongInteger):
        return path, len(value.lstrip("-"))
    children = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in children:
        found = _long_integer(child, (*path, str(key)))
        if found is not None:
            return found
    return None


def validation_refusal(error: ValidationError) -> tuple[str, str]:
    """The field a request body is refused on (its dotted path, `body` for the body itself) and why, in words."""
    first = error.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "body"
    return field, f"{field}: {validation_words(first)}"


def validation_words(error: ErrorDetails) -> str:
    """Why pydantic refused a value: a check of ours in its own words (without pydantic's `Value error, `), a pattern
    in words (never the regular expression), else pydantic's message."""
    context = error.get("ctx") or {}
    if error["type"] == "value_error" and "error" in context:
        return str(context["error"])
    if error["type"] == "string_pattern_mismatch":
        return PATTERN_WORDS.get(str(context.get("pattern")), "is not in the form the field takes (docs/openapi.json)")
    return error["msg"]
