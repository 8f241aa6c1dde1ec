"""Lambda, as the local cloud needs it from moto.

1. Lambda: moto's docker-less Lambda echoes its input; an invoke runs the function's real handler
   in-process (dispatch.py), and an `Event` invoke runs it in the background, as Lambda does. An
   UpdateFunctionConfiguration that sets the environment takes effect on the next invoke, as in Lambda
   (an operator changing a setting, as a redeploy would).

tests/integration/test_moto_adaptations.py holds a test per adaptation that fails if moto changes under it.
"""

from __future__ import annotations

import contextlib
from typing import Any

from gpupilot.localcloud.dispatch import HandlerDispatcher
from gpupilot.localcloud.moto_adaptations.patches import Patches


def run_handlers_in_process(patches: Patches, dispatcher: HandlerDispatcher) -> None:
    """1. Lambda invokes run the real handlers; `Event` invokes run in the background."""
    import json

    from moto.awslambda_simple.models import LambdaSimpleBackend

    def invoke(
        self: Any, function_name: str, qualifier: str | None, body: Any, headers: Any, response_headers: Any
    ) -> bytes:
        fn = self.get_function(function_name, qualifier)
        key = dispatcher.by_name(fn.function_name).key
        event = json.loads(body) if body else {}
        if (headers or {}).get("X-Amz-Invocation-Type") == "Event":
            dispatcher.invoke_async(key, event)
            return b""
        result, errored = dispatcher.invoke(key, event)
        if errored:
            response_headers["x-amz-function-error"] = "Unhandled"
        payload = json.dumps(result).encode()
        response_headers["Content-Length"] = str(len(payload))
        return payload

    original_update = LambdaSimpleBackend.update_function_configuration

    def update_configuration(self: Any, function_name: str, qualifier: str, body: dict[str, Any]) -> Any:
        answer = original_update(self, function_name, qualifier, body)
        variables = (body.get("Environment") or {}).get("Variables")
        if variables is not None:
            with contextlib.suppress(KeyError):  # not (yet) a function of the local deployment
                dispatcher.update_environment(self.get_function(function_name, qualifier).function_name, variables)
        return answer

    patches.replace(LambdaSimpleBackend, "invoke", invoke)
    patches.replace(LambdaSimpleBackend, "update_function_configuration", update_configuration)
