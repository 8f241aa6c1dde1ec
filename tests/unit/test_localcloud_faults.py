"""The local cloud's faults: each throttle is the error its service returns, parsed by botocore as AWS's own, and
so is each refusal the world names; draws follow the world's probabilities; events are dropped, duplicated,
held back."""

from __future__ import annotations

import time
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError

from functions.shared.adapters.transient import is_transient
from gpupilot.localcloud.faults import THROTTLES, Faults
from gpupilot.localcloud.world import REFUSABLE, FaultsWorld, World, WorldError

CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "batch": ("describe_job_queues", {}),
    "ec2": ("describe_instances", {}),
    "dynamodb": ("get_item", {"TableName": "t", "Key": {"pk": {"S": "x"}}}),
    "stepfunctions": ("list_state_machines", {}),
    "ecs": ("list_clusters", {}),
    "lambda": ("list_functions", {}),
}


@pytest.mark.parametrize("service", sorted(THROTTLES))
def test_a_throttled_call_fails_as_aws_throttles_it_before_anything_is_sent(service: str) -> None:
    faults = Faults(FaultsWorld.model_validate({"throttle": {service: 1.0}}))
    client = boto3.client(
        service, region_name="us-east-1", endpoint_url="http://127.0.0.1:9", aws_access_key_id="x",
        aws_secret_access_key="x", config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
    )  # fmt: skip
    client.meta.events.register("before-send", faults.throttle)
    operation, params = CALLS[service]
    with pytest.raises(ClientError) as raised:
        getattr(client, operation)(**params)
    assert raised.value.response["Error"]["Code"] == THROTTLES[service][0]
    assert is_transient(raised.value)
    assert faults.injected == {f"throttle:{service}": 1}


def test_draws_follow_the_probabilities_and_a_seed_repeats_them() -> None:
    world = FaultsWorld.model_validate({"lambda_errors": 0.3, "seed": 11})
    first = [Faults(world).lambda_error("api") for _ in range(1)]
    draws = Faults(world)
    hits = sum(draws.lambda_error("api") for _ in range(2000))
    assert 500 < hits < 700
    assert first == [Faults(world).lambda_error("api")]
    assert not any(Faults(FaultsWorld()).lambda_error("api") for _ in range(100))


def test_events_are_dropped_duplicated_or_held_back_past_the_next() -> None:
    delivered: list[int] = []
    dropping = Faults(FaultsWorld.model_validate({"events": {"drop": 1.0}})).events(lambda e: delivered.append(e["n"]))
    for n in range(5):
        dropping({"n": n})
    assert delivered == []
    doubling = Faults(FaultsWorld.model_validate({"events": {"duplicate": 1.0}})).events(
        lambda e: delivered.append(e["n"])
    )
    doubling({"n": 1})
    assert delivered == [1, 1]
    delivered.clear()
    reordering = Faults(FaultsWorld.model_validate({"events": {"reorder": True}, "seed": 3})).events(
        lambda e: delivered.append(e["n"])
    )
    for n in range(20):
        reordering({"n": n})
    # (the last held-back events are released by their timer)
    deadline = time.monotonic() + 60
    while len(delivered) < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(delivered) == list(range(20)) and delivered != list(range(20))


def test_a_world_s_faults_are_validated_naming_the_field() -> None:
    for faults, field in (
        ({"throttle": {"s3": 0.5}}, "throttle"),
        ({"throttle": {"batch": 1.5}}, "throttle"),
        ({"lambda_errors": -0.1}, "lambda_errors"),
        ({"events": {"drop": 2}}, "drop"),
        ({"events": {"lost": 1}}, "lost"),
    ):
        with pytest.raises((WorldError, ValueError)) as refused:
            World.model_validate({"faults": faults})
        assert field in str(refused.value), faults


REFUSED_CALLS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "GetSpotPlacementScores": ("ec2", "get_spot_placement_scores", {"TargetCapacity": 1}),
    "DescribeSpotPriceHistory": ("ec2", "describe_spot_price_history", {}),
    "GetServiceQuota": ("service-quotas", "get_service_quota", {"ServiceCode": "ec2", "QuotaCode": "L-DB2E81BA"}),
    "GetProducts": ("pricing", "get_products", {"ServiceCode": "AmazonEC2"}),
}


def unreachable(service: str) -> Any:
    """A client whose calls would fail if they were sent (nothing listens on port 9), without retries."""
    return boto3.client(
        service, region_name="us-east-1", endpoint_url="http://127.0.0.1:9", aws_access_key_id="x",
        aws_secret_access_key="x", config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("operation", "code"), [(operation, code) for operation, codes in REFUSABLE.items() for code in codes]
)
def test_a_refused_call_fails_with_the_worlds_error_in_its_services_protocol_before_anything_is_sent(
    operation: str, code: str
) -> None:
    # Given a world refusing the operation with that error
    faults = Faults(FaultsWorld.model_validate({"refuse": {operation: code}}))
    service, method, params = REFUSED_CALLS[operation]
    client = unreachable(service)
    client.meta.events.register("before-send", faults.refuse)

    # When it is called / Then botocore parses AWS's error, with its HTTP status
    with pytest.raises(ClientError) as raised:
        getattr(client, method)(**params)
    assert raised.value.response["Error"]["Code"] == code
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == REFUSABLE[operation][code]
    assert faults.injected == {f"refuse:{operation}": 1}


def test_a_refusal_leaves_every_other_operation_alone() -> None:
    faults = Faults(FaultsWorld.model_validate({"refuse": {"GetSpotPlacementScores": "UnauthorizedOperation"}}))
    ec2 = unreachable("ec2")
    ec2.meta.events.register("before-send", faults.refuse)
    with pytest.raises(EndpointConnectionError):  # sent, as no fault stopped it
        ec2.describe_availability_zones()
    assert faults.injected == {}
