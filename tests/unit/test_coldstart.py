"""The cold start runs with the cyclic garbage collector paused, in Lambda only, until the first invocation ends."""

from __future__ import annotations

import gc

import pytest

from functions.shared import coldstart
from functions.shared.constants import LAMBDAS
from tests.unit.fresh_interpreter import answer_of

IN_LAMBDA = {"AWS_EXECUTION_ENV": "AWS_Lambda_python3.11"}
HANDLERS = [spec.handler.rpartition(".")[0] for spec in LAMBDAS]

# Imports every handler, then invokes each one (collector paused again first) with an event it refuses and
# ports that refuse any use: whether it succeeds or raises, its first invocation ends the cold start.
_INVOKE_EACH = f"""
import gc, importlib, json, types
from functions.shared import coldstart
handlers = {{m: importlib.import_module(m).handler for m in {HANDLERS!r}}}
after_import = not gc.isenabled()
class NoAws:
    def __getattr__(self, name):
        raise RuntimeError("no AWS in this test")
context = types.SimpleNamespace(
    function_name="f", memory_limit_in_mb=128, invoked_function_arn="arn:aws:lambda:us-east-1:1:function:f",
    aws_request_id="r", log_group_name="g", log_stream_name="s", function_version="1",
)
resumed = {{}}
for module, handler in handlers.items():
    coldstart.pause_collector()
    paused = not gc.isenabled()
    try:
        handler({{"unexpected": ["event"]}}, context, ports=NoAws())
    except Exception:
        pass
    resumed[module] = paused and gc.isenabled()
print(json.dumps({{"paused_after_import": after_import, "resumed": resumed}}))
"""


def test_in_lambda_importing_the_handlers_pauses_the_collector_and_each_first_invocation_resumes_it() -> None:
    answer = answer_of(_INVOKE_EACH, env=IN_LAMBDA)
    assert answer["paused_after_import"] is True
    assert answer["resumed"] == {module: True for module in HANDLERS}


def test_outside_lambda_importing_the_handlers_leaves_the_collector_alone() -> None:
    code = (
        f"import gc, importlib, json\nfor m in {HANDLERS!r}:\n    importlib.import_module(m)\n"
        "print(json.dumps(gc.isenabled()))"
    )
    assert answer_of(code) is True
    assert answer_of(code, env={"AWS_EXECUTION_ENV": "something-else"}) is True


@pytest.mark.parametrize(
    ("value", "expected"),
    [("AWS_Lambda_python3.11", True), ("AWS_Lambda_python3.12", True), ("", False), ("AWS_ECS_FARGATE", False)],
)
def test_in_lambda_reads_the_runtime_identifier(value: str, expected: bool) -> None:
    assert coldstart.in_lambda({"AWS_EXECUTION_ENV": value}) is expected


def test_a_first_invocation_that_raises_still_resumes_the_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_EXECUTION_ENV", "AWS_Lambda_python3.11")
    was_enabled = gc.isenabled()

    @coldstart.ends_cold_start
    def failing(event: dict[str, object], context: object) -> None:
        raise ValueError("bad event")

    try:
        coldstart.pause_collector()
        assert not gc.isenabled()
        with pytest.raises(ValueError, match="bad event"):
            failing({}, None)
        assert gc.isenabled()
    finally:
        if was_enabled:
            gc.enable()


def test_resuming_never_enables_a_collector_the_cold_start_did_not_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_EXECUTION_ENV", raising=False)
    gc.disable()
    try:
        coldstart.pause_collector()
        coldstart.resume_collector()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_api_loads_the_sweep_the_costs_and_a_pools_evidence_only_for_the_routes_that_need_them() -> None:
    # Given the api handler imported as a cold start imports it
    code = (
        "import json, sys\nimport functions.api.handler\nfrom functions.api import account\n"
        "at_import = sorted(m for m in sys.modules if m.startswith('functions.shared.usecases.'))\n"
        "account._sweep()\n"
        "loaded = 'functions.shared.usecases.health.sweep' in sys.modules\n"
        "print(json.dumps({'at_import': at_import, 'sweep_loaded': loaded}))"
    )
    answer = answer_of(code, env=IN_LAMBDA)
    # Then a submit's and a read's use cases are loaded, not the sweep's, the costs' nor a pool's evidence
    assert {"functions.shared.usecases.jobs.submit", "functions.shared.usecases.jobs.queries"} <= set(
        answer["at_import"]
    )
    for route_only in ("health.sweep", "cost.report", "fleet.evidence"):
        assert f"functions.shared.usecases.{route_only}" not in answer["at_import"]
    # ... which GET /health and POST /sweep load on their first use
    assert answer["sweep_loaded"] is True
