"""The local cloud runs a function's concurrent invocations in threads of one process; each sees its own request, as
each Lambda execution environment does."""

from __future__ import annotations

import threading
import types
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver

from gpupilot.localcloud.isolation import isolate


def event(path: str) -> dict[str, Any]:
    return {"httpMethod": "GET", "path": path, "resource": path, "headers": {}, "requestContext": {}}


def handler_module() -> tuple[types.ModuleType, threading.Barrier]:
    """A handler module whose one route keeps its caller in the resolver's context, waits for a second invocation
    to be served beside it, then answers with its path and its caller."""
    module = types.ModuleType("handler")
    app = APIGatewayRestResolver()
    beside = threading.Barrier(2, timeout=30)

    @app.get("/<name>")
    def who(name: str) -> dict[str, Any]:
        app.append_context(caller=name)
        beside.wait()  # both invocations are now inside their route, each having set its own request state
        seen = {"path": app.current_event.path, "caller": app.context.get("caller")}
        beside.wait()  # neither clears its context before the other has read its own
        app.clear_context()
        return seen

    module.app = app  # type: ignore[attr-defined]
    return module, beside


def test_two_concurrent_invocations_each_read_their_own_event_and_context() -> None:
    # Given a handler module as the local cloud imports it
    module, _ = handler_module()
    isolate(module)
    answers: dict[str, Any] = {}

    def invoke(name: str) -> None:
        answers[name] = module.app.resolve(event(f"/{name}"), None)["body"]

    # When alice's and bob's requests are served at the same time
    threads = [threading.Thread(target=invoke, args=(name,)) for name in ("alice", "bob")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    # Then each read its own path and its own caller, as two Lambda environments would
    assert '"path":"/alice"' in answers["alice"] and '"caller":"alice"' in answers["alice"], answers
    assert '"path":"/bob"' in answers["bob"] and '"caller":"bob"' in answers["bob"], answers
