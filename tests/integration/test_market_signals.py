"""The market-signal adapters when AWS will not answer: a refusal (an organisation's policy, a daily limit) or
a throttle that outlasts botocore's retries is SignalUnavailable naming the call and AWS's error code, never a
crash; Service Quotas' own "no such quota" is still None. Errors come from botocore's Stubber, which answers
before anything is sent (as AWS's last answer after the retries would)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber
from moto import mock_aws

from functions.shared.adapters.quotas import ServiceQuotas
from functions.shared.adapters.spot import Ec2SpotMarket
from functions.shared.domain.core.errors import SignalUnavailable
from gpupilot.localcloud.moto_adaptations import adapted_moto

REGION = "us-east-1"
ZONES = ["us-east-1a", "us-east-1b"]


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield


def refused(client: Any, operation: str, code: str, status: int = 400) -> Stubber:
    """`client` answering `operation` with AWS's error `code`, once."""
    stubber = Stubber(client)
    stubber.add_client_error(operation, service_error_code=code, service_message=f"{code} (test)",
                             http_status_code=status)  # fmt: skip
    stubber.activate()
    return stubber


# -- Service Quotas ---------------------------------------------------------------------------------
def test_the_p5_spot_quota_is_read_as_service_quotas_states_it(aws) -> None:
    # Given an account (the local cloud's world) with no spot P5 vCPUs
    with adapted_moto(quotas={"L-C4BD4855": 0}):
        quota = ServiceQuotas(boto3.client("service-quotas", region_name=REGION)).vcpu_quota("L-C4BD4855")

    # Then the quota is read under its own code and name
    assert quota is not None and (quota.code, quota.name, quota.vcpus) == (
        "L-C4BD4855",
        "All P5 Spot Instance Requests",
        0.0,
    )


@pytest.mark.parametrize(("code", "status"), [("AccessDeniedException", 400), ("TooManyRequestsException", 400)])
def test_a_quota_service_quotas_refuses_is_signal_unavailable(aws, code: str, status: int) -> None:
    client = boto3.client("service-quotas", region_name=REGION)
    refused(client, "get_service_quota", code, status)
    with pytest.raises(SignalUnavailable) as raised:
        ServiceQuotas(client).vcpu_quota("L-DB2E81BA")
    assert (raised.value.operation, raised.value.code) == ("GetServiceQuota", code)


def test_a_quota_service_quotas_does_not_have_is_none_and_not_a_failure(aws) -> None:
    client = boto3.client("service-quotas", region_name=REGION)
    refused(client, "get_service_quota", "NoSuchResourceException")
    assert ServiceQuotas(client).vcpu_quota("L-DB2E81BA") is None


# -- EC2's spot market --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("code", "status"),
    [("UnauthorizedOperation", 403), ("MaxConfigLimitExceeded", 400), ("RequestLimitExceeded", 503)],
)
def test_placement_scores_ec2_refuses_are_signal_unavailable(aws, code: str, status: int) -> None:
    # Given EC2 refusing GetSpotPlacementScores: an SCP, the daily configurations limit, throttling past the retries
    ec2 = boto3.client("ec2", region_name=REGION)
    refused(ec2, "get_spot_placement_scores", code, status)

    # When / Then
    with pytest.raises(SignalUnavailable) as raised:
        Ec2SpotMarket(REGION, ec2).placement_scores(["g4dn.xlarge", "g5.xlarge", "g6.xlarge"])
    assert (raised.value.operation, raised.value.code) == ("GetSpotPlacementScores", code)


def test_spot_prices_ec2_refuses_are_signal_unavailable_for_planning_and_costing(aws) -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    stubber = refused(ec2, "describe_spot_price_history", "UnauthorizedOperation", 403)
    stubber.add_client_error("describe_spot_price_history", service_error_code="UnauthorizedOperation",
                             http_status_code=403)  # fmt: skip
    market = Ec2SpotMarket(REGION, ec2)
    with pytest.raises(SignalUnavailable) as latest:
        market.spot_prices(["g5.xlarge"], ZONES)
    with pytest.raises(SignalUnavailable) as over:
        market.spot_over("g5.xlarge", ZONES, "2026-11-23T10:00:00.000Z", "2026-11-23T11:00:00.000Z")
    assert {(e.value.operation, e.value.code) for e in (latest, over)} == {
        ("DescribeSpotPriceHistory", "UnauthorizedOperation")
    }


def test_an_unreachable_endpoint_is_signal_unavailable_naming_the_sdks_error(aws) -> None:
    class Unreachable:
        def get_spot_placement_scores(self, **_: Any) -> Any:
            raise EndpointConnectionError(endpoint_url="https://ec2.us-east-1.amazonaws.com")

    with pytest.raises(SignalUnavailable) as raised:
        Ec2SpotMarket(REGION, Unreachable()).placement_scores(["g4dn.xlarge", "g5.xlarge", "g6.xlarge"])
    assert (raised.value.operation, raised.value.code) == ("GetSpotPlacementScores", "EndpointConnectionError")
