"""moto, faster where the local cloud spends its CPU, with every answer unchanged.

Sampled under load (`make bench`'s local_e2e), half of the local cloud's CPU went to the first of these, and
about a tenth to each of the others; each redoes, per call, work whose result cannot differ:

1. DynamoDB item answers. moto turns an item operation's result into DynamoDB's JSON wire format
   (`moto.dynamodb.models.utilities.dynamo_to_dict`) and then hands it to its generic serializer, which
   walks the operation's output shape member by member, trying several spellings of every attribute name,
   to produce the same JSON. Here the wire-format result's output-shape members are JSON-encoded directly
   (binary values base64, as the serializer encodes them); any other result keeps moto's path.
2. Step Functions executions. moto parses the state machine's ASL with ANTLR at every execution start.
   Here a definition is parsed once and its program shared by the executions of that definition: the
   evaluation state lives in each execution's environment, and every component's heap key (which indexes
   that environment) is fixed before the program is shared, so that concurrent executions never race to
   create one.
3. Step Functions task clients. moto creates a new boto3 client for every task it runs (a Lambda invoke,
   a service integration), with fixed test credentials and configuration. Here one client per region,
   service and endpoint serves every task: boto3 clients are thread-safe.

tests/integration/test_moto_speed.py checks that each answers exactly what moto answers without it.
"""

from __future__ import annotations

import base64
import importlib
import json
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # moto_adaptations applies these: importing it here would be circular
    from gpupilot.localcloud.moto_adaptations import _Patches

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


def direct_dynamodb_item_answers(patches: _Patches) -> None:
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


def _fix_heap_keys(component: Any) -> None:
    """Create the heap key of every evaluation component reachable from `component`, once."""
    from moto.stepfunctions.parser.asl.component.component import Component
    from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent

    seen: set[int] = set()
    stack = [component]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, EvalComponent):
            item.heap_key  # noqa: B018 - the property creates the key on first read
        if isinstance(item, Component):
            stack.extend(vars(item).values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())


def parse_each_definition_once(patches: _Patches) -> None:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

    programs: dict[str, Any] = {}
    lock = threading.Lock()

    def entrypoint(self: Any) -> Any:
        definition = self._evaluation_details.state_machine_details.definition
        with lock:
            program = programs.get(definition)
            if program is None:
                program = AmazonStateLanguageParser.parse(definition)[0]
                _fix_heap_keys(program)
                programs[definition] = program
        return program

    patches.replace(ExecutionWorker, "_get_evaluation_entrypoint", entrypoint)


# The modules of moto's Step Functions interpreter that create a client per task (`from ... import boto_client_for`).
_TASK_CLIENT_MODULES = tuple(
    f"moto.stepfunctions.parser.asl.component.state.exec.state_task.{name}"
    for name in (
        "lambda_eval_utils", "service.state_task_service_aws_sdk", "service.state_task_service_batch",
        "service.state_task_service_dynamodb", "service.state_task_service_ecs", "service.state_task_service_events",
        "service.state_task_service_glue", "service.state_task_service_sfn", "service.state_task_service_sns",
        "service.state_task_service_sqs", "service.state_task_service_unsupported",
    )
)  # fmt: skip


def share_task_clients(patches: _Patches) -> None:
    from moto.core.models import botocore_stubber
    from moto.settings import moto_server_port
    from moto.stepfunctions.parser.asl.utils.boto_client import boto_client_for as make

    clients: dict[tuple[str, str, bool, int], Any] = {}
    lock = threading.Lock()

    def boto_client_for(region: str, service: str, state_credentials: Any = None) -> Any:
        # What moto's own function builds a client from; it ignores the state's credentials.
        key = (region, service, bool(botocore_stubber.enabled), int(moto_server_port()))
        with lock:
            client = clients.get(key)
            if client is None:
                client = clients[key] = make(region, service, state_credentials)
        return client

    for name in _TASK_CLIENT_MODULES:
        module = importlib.import_module(name)
        if hasattr(module, "boto_client_for"):
            patches.replace(module, "boto_client_for", boto_client_for)
