"""Every pattern a request body is checked against has words the API says instead of the regular expression."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from functions.shared.api.contract import ROUTES
from functions.shared.api.refusals import PATTERN_WORDS

BODIES = sorted({route.body for route in ROUTES if route.body is not None}, key=lambda model: model.__name__)


def enforced_patterns(schema: Any) -> set[str]:
    """The patterns pydantic itself checks strings against, anywhere in a core schema."""
    if isinstance(schema, dict):
        own = {schema["pattern"]} if schema.get("type") == "str" and "pattern" in schema else set()
        return own.union(*(enforced_patterns(value) for value in schema.values()))
    if isinstance(schema, list | tuple):
        return set().union(*(enforced_patterns(value) for value in schema))
    return set()


@pytest.mark.parametrize("body", BODIES, ids=lambda model: model.__name__)
def test_every_pattern_a_body_is_checked_against_is_said_in_words(body: type[BaseModel]) -> None:
    # Given the body's model, built / When listing the patterns pydantic checks
    body.model_rebuild()
    patterns = enforced_patterns(body.__pydantic_core_schema__)

    # Then each has its words (a new pattern without them would show its regular expression to the caller)
    assert patterns and patterns <= set(PATTERN_WORDS), sorted(patterns - set(PATTERN_WORDS))
