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

4. DynamoDB transactions. moto saves every table a transaction names by deep-copying it whole and, when the
   transaction is cancelled, puts that copy back in the table's place: a transaction costs what copying the table
   costs (seconds for a table of ten thousand jobs), and a write another thread made to any item of the table
   meanwhile is lost with it. DynamoDB leaves every item of a cancelled transaction as it was and never touches the
   items the transaction does not name ("TransactWriteItems is a synchronous write operation that groups up to
   100 action requests... The actions are completed atomically so that either all of them succeed, or all of them
   fail": TransactWriteItems). Here only the items the transaction names are saved, and restored when it fails.
5. Index projections. moto projects a KEYS_ONLY or INCLUDE index's item by converting the whole item to JSON once
   per projected attribute (nine conversions of a job record for the sweep's index). An index projects top-level
   attributes only, so here they are picked from the item as they are.

tests/integration/test_moto_speed.py checks that each answers exactly what moto answers without it.
"""

from __future__ import annotations

import base64
import copy
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


def item_level_transactions(patches: _Patches) -> None:
    from moto.dynamodb import models as dynamodb_models
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.dynamo_type import DynamoType
    from moto.dynamodb.models.table import Table

    class TablesKept:
        """The `copy` module as moto's DynamoDB backend sees it: a table 'copied' is the table itself (the items a
        transaction names are saved instead, below); anything else is copied as before."""

        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    transact = DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        saved: dict[tuple[str, Any, Any], Any] = {}
        for entry in transact_items:
            try:
                _, action = next(iter(entry.items()))
                table = self.tables[action["TableName"]]
                key = action.get("Key") or action["Item"]
                hash_value = DynamoType(key[table.hash_key_attr])
                range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
            except (KeyError, StopIteration, AttributeError):
                continue  # malformed: moto refuses it before it writes anything
            saved[(table.name, hash_value, range_value)] = copy.deepcopy(table.get_item(hash_value, range_value))
        try:
            transact(self, transact_items)
        except Exception:
            for (name, hash_value, range_value), item in saved.items():
                table = self.tables.get(name)
                if table is None:
                    continue
                place = table.items[hash_value] if range_value is not None else table.items
                slot = range_value if range_value is not None else hash_value
                if item is None:
                    place.pop(slot, None)
                else:
                    place[slot] = item
            raise

    patches.replace(dynamodb_models, "copy", TablesKept)
    patches.replace(DynamoDBBackend, "transact_write_items", transact_write_items)


def pick_projected_attributes(patches: _Patches) -> None:
    from moto.dynamodb.models.dynamo_type import Item, LimitedSizeDict
    from moto.dynamodb.models.table import SecondaryIndex

    project = SecondaryIndex.project

    def picked(self: Any, item: Any) -> Any:
        kind = (self.projection or {}).get("ProjectionType")
        if kind not in ("KEYS_ONLY", "INCLUDE"):
            return project(self, item)
        wanted = set(self.table_key_attrs) | set(self.schema_key_attrs)
        if kind == "INCLUDE":
            wanted |= set(self.projection.get("NonKeyAttributes", []))
        result: Any = Item.__new__(Item)
        result.hash_key, result.range_key = item.hash_key, item.range_key
        # As moto copies an item: its attributes already passed the size check when they were written.
        attrs = LimitedSizeDict.__new__(LimitedSizeDict)
        dict.__init__(attrs, {name: value for name, value in item.attrs.items() if name in wanted})
        result.attrs = attrs
        return result

    patches.replace(SecondaryIndex, "project", picked)
