"""moto made faster (moto_adaptations/dynamodb.py and stepfunctions.py) answers exactly what moto answers alone."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import boto3
from moto import mock_aws

from gpupilot.localcloud.moto_adaptations.dynamodb import ITEM_OPERATIONS, direct_dynamodb_item_answers, wire_json
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
