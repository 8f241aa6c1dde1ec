"""moto made faster (moto_adaptations/dynamodb.py and stepfunctions.py) answers exactly what moto answers alone."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
from moto import mock_aws

from gpupilot.localcloud.moto_adaptations.dynamodb import (
    ITEM_OPERATIONS,
    direct_dynamodb_item_answers,
    item_level_transactions,
    pick_projected_attributes,
    size_items_once,
    wire_json,
)
from gpupilot.localcloud.moto_adaptations.patches import Patches
from gpupilot.localcloud.moto_adaptations.stepfunctions import parse_each_definition_once, share_task_clients
from tests.integration.conftest import MOTO_CONFIG

REGION = "us-east-1"
# Every attribute type DynamoDB has, nested too.
ITEM: dict[str, Any] = {
    "pk": {"S": "job#1"},
    "sk": {"S": "attempt#01"},
    "n": {"N": "12.50"},
    "b": {"B": b"\x00\xffbinary"},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2.5"]},
    "bs": {"BS": [b"x", b"y"]},
    "bool": {"BOOL": False},
    "null": {"NULL": True},
    "m": {"M": {"inner": {"L": [{"S": "x"}, {"N": "1"}, {"M": {"deep": {"BOOL": True}}}]}}},
    "l": {"L": []},
}


def in_moto(speed_up: Callable[[Patches], None] | None, scenario: Callable[[], Any], config: Any = MOTO_CONFIG) -> Any:
    """`scenario` in a fresh moto account, with or without one speed-up."""
    patches = Patches()
    with mock_aws(config=config):
        if speed_up is not None:
            speed_up(patches)
        try:
            return scenario()
        finally:
            patches.undo()


def dynamodb_answers() -> list[tuple[str, Any]]:
    """Every item operation, on every attribute type, with the raw JSON body each answered."""
    client = boto3.client("dynamodb", region_name=REGION)
    bodies: list[tuple[str, Any]] = []
    client.meta.events.register(
        "after-call.dynamodb.*",
        lambda http_response, model, **_: bodies.append((model.name, json.loads(http_response.content or b"{}"))),
    )
    client.create_table(
        TableName="t",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    client.put_item(TableName="t", Item=ITEM, ReturnConsumedCapacity="TOTAL")
    client.put_item(TableName="t", Item=ITEM | {"sk": {"S": "attempt#02"}}, ReturnValues="ALL_OLD")
    client.put_item(TableName="t", Item=ITEM | {"sk": {"S": "attempt#02"}, "n": {"N": "3"}}, ReturnValues="ALL_OLD")
    key = {"pk": ITEM["pk"], "sk": ITEM["sk"]}
    client.get_item(TableName="t", Key=key)
    client.get_item(TableName="t", Key={"pk": {"S": "none"}, "sk": {"S": "none"}})
    client.get_item(TableName="t", Key=key, ProjectionExpression="#m.inner, b", ExpressionAttributeNames={"#m": "m"})
    client.update_item(
        TableName="t", Key=key, UpdateExpression="SET n = n + :one, l = list_append(l, :l) REMOVE #null",
        ExpressionAttributeValues={":one": {"N": "1"}, ":l": {"L": [{"S": "z"}]}},
        ExpressionAttributeNames={"#null": "null"}, ReturnValues="ALL_NEW",
    )  # fmt: skip
    page = client.query(TableName="t", KeyConditionExpression="pk = :pk",
                        ExpressionAttributeValues={":pk": ITEM["pk"]}, Limit=1)  # fmt: skip
    client.query(TableName="t", KeyConditionExpression="pk = :pk", ExpressionAttributeValues={":pk": ITEM["pk"]},
                 ExclusiveStartKey=page["LastEvaluatedKey"], Select="COUNT")  # fmt: skip
    client.scan(TableName="t", ReturnConsumedCapacity="INDEXES")
    client.batch_get_item(RequestItems={"t": {"Keys": [key, {"pk": ITEM["pk"], "sk": {"S": "attempt#02"}}]}})
    client.transact_get_items(TransactItems=[{"Get": {"TableName": "t", "Key": key}}])
    client.delete_item(TableName="t", Key=key, ReturnValues="ALL_OLD")
    client.describe_table(TableName="t")  # not an item operation: moto's own path
    return bodies


def without_volatile(answers: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The table's description carries its creation time: the only value that differs between two runs."""
    for _, body in answers:
        for table in (body.get("Table"), body.get("TableDescription")):
            if table:
                table.pop("CreationDateTime", None)
    return answers


def test_dynamodb_item_operations_answer_the_same_json_directly_encoded():
    alone = without_volatile(in_moto(None, dynamodb_answers))
    faster = without_volatile(in_moto(direct_dynamodb_item_answers, dynamodb_answers))
    assert [name for name, _ in faster] == [name for name, _ in alone]
    assert {name for name, _ in alone} >= ITEM_OPERATIONS
    for (name, mine), (_, moto_s) in zip(faster, alone, strict=True):
        assert mine == moto_s, name


def test_a_result_that_is_not_wire_format_keeps_moto_s_serializer():
    assert wire_json({"Item": {"a": {"S": "x"}}, "LastEvaluatedKey": None}) == '{"Item": {"a": {"S": "x"}}}'
    assert wire_json({"Table": object()}) is None


DEFINITION = json.dumps(
    {
        "StartAt": "Copy",
        "States": {
            "Copy": {"Type": "Pass", "Parameters": {"value.$": "$.value"}, "ResultPath": "$.copied", "Next": "Wait"},
            "Wait": {"Type": "Wait", "Seconds": 0, "Next": "Odd?"},
            "Odd?": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.odd", "BooleanEquals": True, "Next": "Odd"}],
                "Default": "Even",
            },
            "Odd": {"Type": "Pass", "Result": "odd", "ResultPath": "$.parity", "End": True},
            "Even": {"Type": "Pass", "Result": "even", "ResultPath": "$.parity", "End": True},
        },
    }
)


def concurrent_executions(parses: list[str]) -> list[dict[str, Any]]:
    from moto.stepfunctions.parser.asl.parse import asl_parser

    parse = asl_parser.AmazonStateLanguageParser.parse

    def counted(definition: str) -> Any:
        parses.append(definition)
        return parse(definition)

    counting = Patches()
    counting.replace(asl_parser.AmazonStateLanguageParser, "parse", staticmethod(counted))
    try:
        sfn = boto3.client("stepfunctions", region_name=REGION)
        role = "arn:aws:iam::123456789012:role/sfn"
        machine = sfn.create_state_machine(name="m", definition=DEFINITION, roleArn=role)["stateMachineArn"]
        parses.clear()  # creating validates the definition once, with or without the speed-up

        def run(value: int) -> dict[str, Any]:
            arn = sfn.start_execution(
                stateMachineArn=machine, name=f"e{value}", input=json.dumps({"value": value, "odd": value % 2 == 1})
            )
            for _ in range(500):
                done = sfn.describe_execution(executionArn=arn["executionArn"])
                if done["status"] != "RUNNING":
                    return {"status": done["status"], "output": json.loads(done.get("output", "null"))}
                time.sleep(0.01)
            raise AssertionError("execution did not finish")

        with ThreadPoolExecutor(8) as pool:
            return list(pool.map(run, range(16)))
    finally:
        counting.undo()


def test_concurrent_executions_of_one_definition_share_one_parse_and_keep_their_own_state():
    config = MOTO_CONFIG | {"stepfunctions": {"execute_state_machine": True}}
    parses_alone: list[str] = []
    parses_faster: list[str] = []
    alone = in_moto(None, lambda: concurrent_executions(parses_alone), config)
    faster = in_moto(parse_each_definition_once, lambda: concurrent_executions(parses_faster), config)
    assert faster == alone
    assert [e["output"] for e in faster] == [
        {"value": v, "odd": v % 2 == 1, "copied": {"value": v}, "parity": "odd" if v % 2 else "even"} for v in range(16)
    ]
    assert len(parses_alone) == 16 and len(parses_faster) == 1


def test_step_functions_tasks_share_one_client_per_region_and_service():
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

    def clients() -> list[Any]:
        make = lambda_eval_utils.boto_client_for
        wanted = [("us-east-1", "lambda"), ("us-east-1", "lambda"), ("us-east-1", "sqs"), ("eu-west-1", "lambda")]
        return [make(region, service) for region, service in wanted]

    alone = in_moto(None, clients)
    assert alone[0] is not alone[1]  # moto makes one per task
    shared = in_moto(share_task_clients, clients)
    assert shared[0] is shared[1] and len({id(c) for c in shared}) == 3
    assert shared[3].meta.region_name == "eu-west-1" and shared[2].meta.service_model.service_name == "sqs"


def transactions() -> list[Any]:
    """A transaction that applies, one cancelled by a failed condition (with what the table held after each), and
    what another writer wrote to an item the cancelled transaction did not name, while it ran."""
    client = boto3.client("dynamodb", region_name=REGION)
    key_schema = [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
    attributes = [{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk")]
    client.create_table(
        TableName="t", KeySchema=key_schema, AttributeDefinitions=attributes, BillingMode="PAY_PER_REQUEST"
    )
    for n in range(3):
        client.put_item(TableName="t", Item=ITEM | {"pk": {"S": f"job#{n}"}})
    key = {"pk": {"S": "job#0"}, "sk": ITEM["sk"]}
    other = {"pk": {"S": "job#1"}, "sk": ITEM["sk"]}
    seen: list[Any] = []

    def update(item_key: dict[str, Any], value: str, condition: str = "attribute_exists(pk)") -> dict[str, Any]:
        values = {":v": {"S": value}}
        return {"Update": {"TableName": "t", "Key": item_key, "UpdateExpression": "SET v = :v",
                           "ConditionExpression": condition, "ExpressionAttributeValues": values}}  # fmt: skip

    client.transact_write_items(TransactItems=[update(key, "first"), {"Put": {"TableName": "t", "Item": ITEM}}])
    seen.append(client.scan(TableName="t")["Items"])
    from moto.dynamodb.models import dynamodb_backends

    backend = dynamodb_backends["123456789012"][REGION]
    real_update = backend.update_item

    def another_writer_meanwhile(*args: Any, **kwargs: Any) -> Any:
        # What another thread writes to an item the transaction does not name, while the transaction runs.
        backend.update_item = real_update
        client.put_item(TableName="t", Item=ITEM | {"pk": {"S": "job#2"}, "v": {"S": "other writer"}})
        return real_update(*args, **kwargs)

    backend.update_item = another_writer_meanwhile
    try:
        client.transact_write_items(
            TransactItems=[update(key, "second"), update(other, "never", "attribute_not_exists(pk)")]
        )
    except client.exceptions.TransactionCanceledException as error:
        seen.append(error.response["CancellationReasons"])
    finally:
        backend.update_item = real_update
    seen.append(sorted(client.scan(TableName="t")["Items"], key=lambda item: item["pk"]["S"]))
    return seen


def test_a_transaction_saves_only_its_items_answers_as_moto_and_keeps_other_writers_writes():
    # Given the same transactions in moto alone and with only the named items saved
    applied, reasons, after = in_moto(item_level_transactions, transactions)
    applied_alone, reasons_alone, after_alone = in_moto(None, transactions)
    # Then each answers the same, and the cancelled one leaves its items as they were
    assert (applied, reasons) == (applied_alone, reasons_alone)
    assert [r["Code"] for r in reasons] == ["None", "ConditionalCheckFailed"]
    job0 = next(item for item in after if item["pk"]["S"] == "job#0")
    assert job0["v"] == {"S": "first"}
    # ... but what another writer wrote to another item meanwhile stays (moto alone put the whole table back)
    job2 = next(item for item in after if item["pk"]["S"] == "job#2")
    assert job2["v"] == {"S": "other writer"}
    assert "v" not in next(item for item in after_alone if item["pk"]["S"] == "job#2")


def index_answers() -> list[Any]:
    """Queries of a KEYS_ONLY, an INCLUDE and an ALL index, over items of every attribute type."""
    client = boto3.client("dynamodb", region_name=REGION)
    index_key = [{"AttributeName": "g", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}]
    projections = {"keys": {"ProjectionType": "KEYS_ONLY"}, "all": {"ProjectionType": "ALL"},
                   "some": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["m", "ns", "b", "missing"]}}  # fmt: skip
    client.create_table(
        TableName="t",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": "S"} for n in ("pk", "sk", "g")],
        GlobalSecondaryIndexes=[
            {"IndexName": name, "KeySchema": index_key, "Projection": projection}
            for name, projection in projections.items()
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    for n in range(3):
        client.put_item(TableName="t", Item=ITEM | {"pk": {"S": f"job#{n}"}, "g": {"S": "G"}})
    return [
        client.query(
            TableName="t", IndexName=name, KeyConditionExpression="g = :g", ExpressionAttributeValues={":g": {"S": "G"}}
        )["Items"]
        for name in projections
    ]


def counting_calls(
    scenario: Callable[[], Any], owner: type, method: str, calls: list[dict[str, Any]]
) -> Callable[[], Any]:
    """`scenario`, keeping the keyword arguments of each call of moto's `owner.method` while it runs."""

    def counted() -> Any:
        original = getattr(owner, method)
        counting = Patches()
        counting.replace(owner, method, lambda *args, **kwargs: calls.append(kwargs) or original(*args, **kwargs))
        try:
            return scenario()
        finally:
            counting.undo()

    return counted


def counting_conversions(scenario: Callable[[], Any], conversions: list[dict[str, Any]]) -> Callable[[], Any]:
    """`scenario`, counting moto's conversions of a whole item to JSON while it runs."""
    from moto.dynamodb.models.dynamo_type import Item

    return counting_calls(scenario, Item, "to_regular_json", conversions)


def test_an_index_projection_picks_the_attributes_moto_would_project_without_converting_the_item():
    converted_alone: list[dict[str, Any]] = []
    converted_picked: list[dict[str, Any]] = []
    alone = in_moto(None, counting_conversions(index_answers, converted_alone))
    picked = in_moto(pick_projected_attributes, counting_conversions(index_answers, converted_picked))
    assert picked == alone
    assert converted_alone and not converted_picked
    keys_only, _, some = picked
    assert (set(keys_only[0]), set(some[0])) == ({"pk", "sk", "g"}, {"pk", "sk", "g", "m", "ns", "b"})


def item_sizes() -> list[Any]:
    """Items of every attribute type put and read back, one at the size limit and one a byte over it refused."""
    client = boto3.client("dynamodb", region_name=REGION)
    client.create_table(
        TableName="t",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    wide = ITEM | {f"a{n}": {"S": "x" * n} for n in range(40)}
    client.put_item(TableName="t", Item=wide)
    answers: list[Any] = [client.get_item(TableName="t", Key={"pk": ITEM["pk"]})["Item"]]
    base = {"pk": {"S": "big"}, "pad": {"S": ""}}
    room = 405000 - sum(len(name) + len(value["S"]) for name, value in base.items())
    for padding in (room, room + 1):
        try:
            client.put_item(TableName="t", Item=base | {"pad": {"S": "x" * padding}})
            answers.append(("stored", padding - room))
        except client.exceptions.ClientError as error:
            answers.append((error.response["Error"]["Code"], error.response["Error"]["Message"], padding - room))
    return answers


def counting_size_checks(scenario: Callable[[], Any], checks: list[dict[str, Any]]) -> Callable[[], Any]:
    """`scenario`, counting moto's per-attribute size checks while it runs."""
    from moto.dynamodb.models.dynamo_type import LimitedSizeDict

    return counting_calls(scenario, LimitedSizeDict, "__setitem__", checks)


def test_an_item_sized_once_is_stored_and_refused_exactly_as_moto_sizes_it_attribute_by_attribute():
    checked_alone: list[dict[str, Any]] = []
    checked_once: list[dict[str, Any]] = []
    alone = in_moto(None, counting_size_checks(item_sizes, checked_alone))
    once = in_moto(size_items_once, counting_size_checks(item_sizes, checked_once))
    assert once == alone
    assert alone[1] == ("stored", 0) and alone[2][0] == "ValidationException"
    assert len(checked_alone) > 50 and not checked_once


def counting_images_made(scenario: Callable[[], Any], made: list[dict[str, Any]]) -> Callable[[], Any]:
    """`scenario`, keeping what moto makes each image of while it runs (`ami_id` and the rest)."""
    from moto.ec2.models.amis import Ami

    return counting_calls(scenario, Ami, "__init__", made)


def no_image_read() -> list[Any]:
    """EC2 calls in two regions that read no image: a network, as the stack's deploy makes one."""
    answers = []
    for region in (REGION, "us-west-2"):
        ec2 = boto3.client("ec2", region_name=region)
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        answers.append(len(ec2.describe_vpcs(VpcIds=[vpc])["Vpcs"]))
    return answers


def image_answers() -> list[Any]:
    """What reads images: DescribeImages (all of the region's, one by id), a launch of one and the instance it made."""
    ec2 = boto3.client("ec2", region_name=REGION)
    every = ec2.describe_images(Owners=["amazon"])["Images"]
    one = ec2.describe_images(ImageIds=["ami-12c6146b"])["Images"]
    instance = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1)["Instances"][0]
    fields = ("ImageId", "Name", "Platform", "Architecture", "RootDeviceName", "OwnerId", "State")
    return [
        sorted(tuple(image.get(field) for field in fields) for image in every),
        [tuple(image.get(field) for field in fields) for image in one],
        {key: instance.get(key) for key in ("ImageId", "Platform", "Architecture", "RootDeviceName")},
    ]


def test_a_region_whose_images_nothing_reads_makes_none_and_a_read_makes_and_answers_moto_s_own():
    from gpupilot.localcloud.moto_adaptations.ec2_images import images_when_first_read

    made_alone: list[dict[str, Any]] = []
    made_later: list[dict[str, Any]] = []
    # Given calls that read no image, in two regions: moto alone makes every region's images, here none are made
    assert in_moto(images_when_first_read, counting_images_made(no_image_read, made_later)) == [1, 1]
    assert in_moto(None, counting_images_made(no_image_read, made_alone)) == [1, 1]
    assert len(made_alone) > 2000 and not made_later
    # And what reads them answers as moto alone does, the region's images made once, as moto makes them
    made_alone.clear()
    alone = in_moto(None, counting_images_made(image_answers, made_alone))
    read = in_moto(images_when_first_read, counting_images_made(image_answers, made_later))
    assert read == alone
    made_ids = [sorted(image["ami_id"] for image in made) for made in (made_later, made_alone)]
    assert len(alone[0]) > 1000 and made_ids[0] == made_ids[1]
