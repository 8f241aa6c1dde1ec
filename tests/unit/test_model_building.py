"""Domain models are built on first use: a handler's cold start builds none, and a use builds only what it needs."""

from __future__ import annotations

import textwrap

from tests.unit.fresh_interpreter import answer_of

_CHILD = textwrap.dedent(
    """
    import importlib, json, sys
    from pydantic_core import SchemaValidator as Validator
    importlib.import_module("functions.ensure_queue.handler")
    from functions.shared.domain.core.model import every_model

    def built():
        validators = {m: m.__dict__.get("__pydantic_validator__") for m in every_model()}
        return sorted(m.__name__ for m, validator in validators.items() if isinstance(validator, Validator))

    at_import = built()
    from functions.shared.domain.pools.states import PoolState
    PoolState.model_validate({"pool": "gpupilot-g6-xlarge-od"})
    print(json.dumps({"models": len(every_model()), "at_import": at_import, "after_use": built()}))
    """
)


def test_importing_a_handler_builds_no_model_and_using_one_builds_only_that_one():
    result = answer_of(_CHILD)
    assert result["models"] > 40
    assert result["at_import"] == []
    assert result["after_use"] == ["PoolState"]
