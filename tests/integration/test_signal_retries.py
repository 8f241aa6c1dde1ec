"""A market signal throttled past its retries gives up after two attempts, not botocore's five: a plan whose every
signal is throttled still answers well within API Gateway's 29 s. What an ended attempt cost is no hint: its spot
price takes the standard retries. AWS's throttling answers come from a botocore `before-send` hook on the clients
the functions make, registered ahead of moto's own (as the local cloud's throttle faults answer them: botocore
retries them as it would AWS's), and the backoff is not slept."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.retries.standard import ExponentialBackoff
from moto import mock_aws

from functions.shared.adapters.clients import client, reset_clients
from functions.shared.adapters.prices import PRICE_LIST_REGION
from functions.shared.adapters.quotas import ServiceQuotas
from functions.shared.adapters.spot import Ec2SpotMarket
from functions.shared.domain.core.errors import SignalUnavailable
from gpupilot.localcloud.faults import error_response
from gpupilot.localcloud.moto_adaptations import SpotMarket, adapted_moto
from tests.integration.conftest import Cloud
from tests.integration.test_api import BODY, call

REGION = "us-east-1"
ZONES = ["us-east-1a", "us-east-1b"]
# The throttling answer of each market signal's operation: (service, error code, HTTP status).
THROTTLED = {
    "GetServiceQuota": ("service-quotas", "TooManyRequestsException", 400),
    "DescribeSpotPriceHistory": ("ec2", "RequestLimitExceeded", 503),
    "GetSpotPlacementScores": ("ec2", "RequestLimitExceeded", 503),
    "GetProducts": ("pricing", "ThrottlingException", 400),
}


class Throttle:
    """Answers every attempt at a market signal's operation with its throttling error, and counts the attempts
    (botocore `before-send`, once per attempt) and the calls (`before-call`, once per call, retries included)."""

    def __init__(self) -> None:
        self.attempts: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()

    def call(self, model: Any = None, **_: Any) -> None:
        if model is not None and model.name in THROTTLED:
            self.calls[model.name] += 1

    def send(self, request: Any = None, event_name: str = "", **_: Any) -> Any:
        operation = event_name.split(".")[2] if event_name.count(".") >= 2 else ""
        if operation not in THROTTLED:
            return None
        self.attempts[operation] += 1
        service, code, status = THROTTLED[operation]
        return error_response(service, code, status, getattr(request, "url", ""), "Rate exceeded (test)")


@pytest.fixture
def throttle(monkeypatch: pytest.MonkeyPatch) -> Iterator[Throttle]:
    """Every market signal throttled in the clients the functions make for them; no backoff slept. Only those
    clients are hooked: a signal read through another client would not be throttled, and the tests would say so."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: 0.0)
    throttled = Throttle()
    reset_clients()
    # An adapter asks for the process's region (None) or names it (a capacity region's adapters name theirs).
    regional = [
        made
        for region in (None, REGION)
        for made in (
            client("service-quotas", region, hint=True),
            client("ec2", region, hint=True),
            client("ec2", region),
        )
    ]
    for made in [*regional, client("pricing", PRICE_LIST_REGION, True)]:
        made.meta.events.register_first("before-call", throttled.call)
        made.meta.events.register_first("before-send", throttled.send)
    yield throttled
    reset_clients()


@pytest.fixture
def aws() -> Iterator[None]:
    """moto, with the spot market the local cloud adds to it (moto has no GetSpotPlacementScores)."""
    with mock_aws(), adapted_moto(spot_market=SpotMarket(offered=lambda instance_type: list(ZONES))):
        yield


def test_each_market_signal_throttled_past_its_retries_is_tried_twice(aws, throttle: Throttle) -> None:
    # Given every market signal throttled / When each adapter reads its signal through the functions' clients
    market = Ec2SpotMarket(REGION)
    reads = {
        "GetServiceQuota": lambda: ServiceQuotas().vcpu_quota("L-DB2E81BA"),
        "DescribeSpotPriceHistory": lambda: market.spot_prices(["g5.xlarge"], ZONES),
        "GetSpotPlacementScores": lambda: market.placement_scores(["g4dn.xlarge", "g5.xlarge", "g6.xlarge"]),
    }
    for operation, read in reads.items():
        with pytest.raises(SignalUnavailable) as raised:
            read()
        assert raised.value.operation == operation

    # Then each gave up after two attempts
    assert dict(throttle.attempts) == dict.fromkeys(reads, 2)


def test_the_spot_price_of_an_ended_attempt_takes_the_standard_retries(aws, throttle: Throttle) -> None:
    # Given spot price history throttled / When an ended spot attempt is priced
    with pytest.raises(SignalUnavailable):
        Ec2SpotMarket(REGION).spot_over("g5.xlarge", ZONES, "2026-11-23T10:00:00.000Z", "2026-11-23T11:00:00.000Z")

    # Then it was retried as any call that is not a hint is (what it cost is not one)
    assert throttle.attempts["DescribeSpotPriceHistory"] > 2


def test_a_plan_whose_every_market_signal_is_throttled_tries_each_call_twice(cloud: Cloud, throttle: Throttle) -> None:
    # Given the stack deployed, and every market signal throttled
    # When a spot-first job is planned through the api function
    status, plan = call(cloud, "POST", "/plan", BODY | {"capacity": "spot-first"})

    # Then the plan answers with a warning per signal, and no signal call was attempted more than twice
    assert status == 200 and plan["candidates"], plan
    for operation in ("GetServiceQuota", "DescribeSpotPriceHistory", "GetProducts"):
        assert any(operation in warning for warning in plan["warnings"]), (operation, plan["warnings"])
    assert throttle.calls and all(throttle.attempts[op] == 2 * calls for op, calls in throttle.calls.items())
    assert boto3.client("dynamodb", region_name=REGION).list_tables()["TableNames"]  # the table was not throttled
