"""DynamoDB: as DynamoDB pages an index, and faster, with every answer unchanged.

22. DynamoDB index pages: "The maximum size of the results returned by a Query operation is 1 MB. This
   includes the sizes of all the attribute names and values across all of the items returned", and an index
   query is sized by "the sizes of the index entries, rather than the size of the item in the base table"
   (DynamoDB Developer Guide, Using Global Secondary Indexes, read capacity units); a Scan "returns one or more
   items and item attributes by accessing every item in a table or a secondary index", 1 MB of them a page
   (Scan). moto sizes the table's whole items, so an index that projects a few attributes of large items answers
   in many more pages than DynamoDB does (the sweep's index of unfinished jobs: twice as many). Here a Query or a
   Scan of a KEYS_ONLY or INCLUDE index walks the index's entries (the items carrying its keys, as projected),
   sized as DynamoDB sizes them.

25. DynamoDB writes, one at a time: moto evaluates a write's condition and then applies the write to the item in
   place, with no lock (an UpdateItem deep-copies the item and validates its expression between the two), so two
   handlers writing one item at once can both pass their conditions, the later undoing the earlier: a job's RUNNING
   event, handled while its workflow recorded SUCCEEDED, put the record back to RUNNING (its condition, a status rank
   below RUNNING's, held when it was evaluated). DynamoDB evaluates a condition against the item as the write applies
   to it ("A conditional write succeeds only if the item attributes meet one or more expected conditions":
   Developer Guide, Condition expressions), one write of an item after another. Here every write (PutItem,
   UpdateItem, DeleteItem, BatchWriteItem, TransactWriteItems with its restore on failure) and every GetItem holds one
   lock, so none sees or undoes another's write half done; Query and Scan do not wait for it (they read a snapshot
   of what they page, as moto builds it).

13. Speed, answers unchanged (sampled under load by `make bench`'s local_e2e):

DynamoDB item answers. moto turns an item operation's result into DynamoDB's JSON wire format
   (`moto.dynamodb.models.utilities.dynamo_to_dict`) and then hands it to its generic serializer, which
   walks the operation's output shape member by member, trying several spellings of every attribute name,
   to produce the same JSON. Here the wire-format result's output-shape members are JSON-encoded directly
   (binary values base64, as the serializer encodes them); any other result keeps moto's path.

DynamoDB transactions. moto saves every table a transaction names by deep-copying it whole and, when the
   transaction is cancelled, puts that copy back in the table's place: a transaction costs what copying the table
   costs (seconds for a table of ten thousand jobs), and a write another thread made to any item of the table
   meanwhile is lost with it. DynamoDB leaves every item of a cancelled transaction as it was and never touches the
   items the transaction does not name ("TransactWriteItems is a synchronous write operation that groups up to
   100 action requests... The actions are completed atomically so that either all of them succeed, or all of them
   fail": TransactWriteItems). Here only the items the transaction names are saved, and restored when it fails.

Index projections. moto projects a KEYS_ONLY or INCLUDE index's item by converting the whole item to JSON once
   per projected attribute (nine conversions of a job record for the sweep's index). An index projects top-level
   attributes only, so here they are picked from the item as they are.

Item sizes. moto checks a new item against DynamoDB's 400 KB limit attribute by attribute, summing the sizes of all
   the attributes set so far at each one: a PutItem of a job record (thirty attributes, its attempts nested) sized it
   thirty times over, a quarter of the sweep bench's seeding. Here the item is sized once, with the same sum and the
   same ItemSizeTooLarge.

tests/integration/test_moto_adaptations.py holds a test per adaptation that fails if moto changes under it.
tests/integration/test_moto_speed.py checks that each speed-up answers exactly what moto answers without it.
"""

from __future__ import annotations

import base64
import copy
import inspect
import json
import threading
from collections.abc import Callable
from typing import Any

from gpupilot.localcloud.moto_adaptations.patches import Patches

# DynamoDB operations whose result moto builds with dynamo_to_dict: plain JSON values, bytes for binary.
ITEM_OPERATIONS = frozenset(
    {"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"}
)


DYNAMODB_CONTENT_TYPE = "application/x-amz-json-1.0"
ITEM_SIZE_LIMIT = 405000


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


def direct_dynamodb_item_answers(patches: Patches) -> None:
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


def item_level_transactions(patches: Patches) -> None:
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


# 25. The lock every DynamoDB write (and GetItem) of the embedded AWS holds: re-entrant, as a transaction's writes run
# inside it.
ITEM_WRITES = threading.RLock()
# (moto's BatchWriteItem makes its writes through put_item and delete_item.)
LOCKED_OPERATIONS = ("put_item", "update_item", "delete_item", "transact_write_items", "get_item")


def one_write_at_a_time(patches: Patches) -> None:
    """25. Every DynamoDB write (and GetItem) holds one lock: none sees or undoes another's write half done."""
    from moto.dynamodb.models import DynamoDBBackend

    def locked(operation: Callable[..., Any]) -> Callable[..., Any]:
        def run(self: Any, *args: Any, **kwargs: Any) -> Any:
            with ITEM_WRITES:
                return operation(self, *args, **kwargs)

        return run

    for name in LOCKED_OPERATIONS:
        patches.replace(DynamoDBBackend, name, locked(getattr(DynamoDBBackend, name)))


def pick_projected_attributes(patches: Patches) -> None:
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


def size_items_once(patches: Patches) -> None:
    from moto.dynamodb.exceptions import ItemSizeTooLarge
    from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
    from moto.dynamodb.models.utilities import bytesize

    def sized_once(self: Any, hash_key: Any, range_key: Any, attrs: dict[str, Any]) -> None:
        self.hash_key, self.range_key = hash_key, range_key
        values = {key: DynamoType(value) for key, value in attrs.items()}
        # LimitedSizeDict's sum at its last attribute, and its limit (between DynamoDB's 409 and 410 KB, it says).
        if sum(bytesize(key) + value.size() for key, value in values.items()) > ITEM_SIZE_LIMIT:
            raise ItemSizeTooLarge
        self.attrs = LimitedSizeDict.__new__(LimitedSizeDict)
        dict.__init__(self.attrs, values)

    patches.replace(Item, "__init__", sized_once)


def index_pages_of_index_entries(patches: Patches) -> None:
    """22. A Query or a Scan of a KEYS_ONLY or INCLUDE index pages by the size of its entries, not of the table's
    items."""
    from moto.dynamodb.models.table import Table

    query: Callable[..., Any] = Table.query
    scan: Callable[..., Any] = Table.scan
    all_items: Callable[..., Any] = Table.all_items
    has_idx_items: Callable[..., Any] = Table.has_idx_items
    querying = threading.local()  # the index a read of this thread walks: other threads' reads see whole items

    def index_entries(self: Any) -> Any:
        index: Any = getattr(querying, "index", None)
        if index is None or getattr(querying, "table", None) is not self:
            return all_items(self)
        keys = index.schema_key_attrs
        return [index.project(item) for item in all_items(self) if all(key in item.attrs for key in keys)]

    def scanned_entries(self: Any, index_name: str) -> Any:
        index: Any = getattr(querying, "index", None)
        if index is None or getattr(querying, "table", None) is not self:
            return has_idx_items(self, index_name)
        return [index.project(item) for item in has_idx_items(self, index_name)]

    def by_entries(read: Callable[..., Any]) -> Callable[..., Any]:
        def paged_by_entries(self: Any, *args: Any, **kwargs: Any) -> Any:
            name = inspect.signature(read).bind(self, *args, **kwargs).arguments.get("index_name")
            index = next((i for i in self.all_indexes() if i.name == name), None) if name else None
            if index is None or (index.projection or {}).get("ProjectionType") not in ("KEYS_ONLY", "INCLUDE"):
                return read(self, *args, **kwargs)
            querying.index, querying.table = index, self
            try:
                return read(self, *args, **kwargs)
            finally:
                querying.index = querying.table = None

        return paged_by_entries

    patches.replace(Table, "all_items", index_entries)
    patches.replace(Table, "has_idx_items", scanned_entries)
    patches.replace(Table, "query", by_entries(query))
    patches.replace(Table, "scan", by_entries(scan))
