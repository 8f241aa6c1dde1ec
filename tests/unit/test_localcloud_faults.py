"""The local cloud's faults: each throttle is the error its service returns, parsed by botocore as AWS's own;
draws follow the world's probabilities; events are dropped, duplicated, held back."""

from __future__ import annotations

import time
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from functions.shared.adapters.transient import is_transient
from gpupilot.localcloud.faults import THROTTLES, Faults
from gpupilot.localcloud.world import FaultsWorld, World, WorldError

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
    time.sleep(0.8)  # the last held-back events are released by their timer
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
