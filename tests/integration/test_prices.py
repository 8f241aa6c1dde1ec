"""On-demand prices from the AWS Price List (the local cloud serves GetProducts in its shape), cached in the
table for a day; the snapshot only for its own region; a region without data is never priced as another."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError

from functions.shared.adapters.prices import MarketPrices, price_list, price_snapshot
from functions.shared.adapters.spot import Ec2SpotMarket
from tests.integration.conftest import Cloud

REGION = "us-east-1"


def prices_for(cloud: Cloud, region: str = REGION, pricing: Any = None) -> tuple[MarketPrices, list[str]]:
    """A fresh adapter (a cold process) and the AWS operations its calls made."""
    calls: list[str] = []
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    pricing = pricing or boto3.client("pricing", region_name="us-east-1")
    for client in (dynamodb, pricing):
        if hasattr(client, "meta"):
            client.meta.events.register("before-call", lambda model, **_: calls.append(model.name))
    adapter = MarketPrices(region, cloud.deployment.table_name, Ec2SpotMarket(region), dynamodb, pricing)
    return adapter, calls


@pytest.fixture
def cloud_prices(cloud: Cloud) -> Iterator[Cloud]:
    """The integration cloud: moto adapted, the Price List served in its own shape."""
    yield cloud


def test_the_price_list_is_read_once_then_served_from_the_table(cloud_prices: Cloud) -> None:
    cold, calls = prices_for(cloud_prices)
    quote = cold.on_demand("g5.xlarge")
    assert quote is not None and quote.hourly_usd == 1.006
    # Dated by the prices' publication (the local Price List serves the bundled snapshot: its date), not the read
    assert quote.pricing == f"on-demand us-east-1 AWS Price List of {price_snapshot('us-east-1')['as_of']}"  # type: ignore[index]
    assert calls[0] == "GetItem" and "GetProducts" in calls and calls[-1] == "PutItem"
    # Another process within the day reads the table only, once, whatever it prices next
    warm, calls = prices_for(cloud_prices)
    assert warm.on_demand("g6.xlarge") is not None and warm.on_demand("g4dn.xlarge") is not None
    assert calls == ["GetItem"]


# A real region GPU Pilot bundles no snapshot of (and the local Price List therefore has no products for).
NO_DATA_REGION = "af-south-1"


def test_a_region_without_price_data_is_priced_as_no_other(cloud_prices: Cloud) -> None:
    adapter, _ = prices_for(cloud_prices, region=NO_DATA_REGION)
    assert adapter.on_demand("g5.xlarge") is None


def test_another_region_is_priced_from_its_own_price_list_products(cloud_prices: Cloud) -> None:
    quote = prices_for(cloud_prices, region="eu-north-1")[0].on_demand("g5.xlarge")
    assert quote is not None and quote.pricing.startswith("on-demand eu-north-1 AWS Price List of ")
    assert quote.hourly_usd == price_snapshot("eu-north-1")["prices"]["g5.xlarge"] != 1.006  # type: ignore[index]


def test_a_region_whose_prices_are_dated_by_their_month_is_priced_with_the_day_the_price_list_says(
    cloud_prices: Cloud,
) -> None:
    # Given us-west-2, whose bundled prices (the local Price List's products) are dated by their month, 2025-08
    assert price_snapshot("us-west-2")["as_of"] == "2025-08"  # type: ignore[index]

    # When it is priced from its Price List products
    quote = prices_for(cloud_prices, region="us-west-2")[0].on_demand("g5.xlarge")

    # Then the source is dated by a day: the first its date allows, as the products' publicationDate says
    assert quote is not None and quote.pricing == "on-demand us-west-2 AWS Price List of 2025-08-01"


def test_without_the_price_list_the_snapshot_prices_its_own_region(cloud_prices: Cloud) -> None:
    class Unreachable:
        def get_paginator(self, name: str) -> Any:
            raise EndpointConnectionError(endpoint_url="https://api.pricing.us-east-1.amazonaws.com")

    adapter, _ = prices_for(cloud_prices, pricing=Unreachable())
    quote = adapter.on_demand("g5.xlarge")
    assert quote is not None and "price snapshot of" in quote.pricing
    assert prices_for(cloud_prices, region=NO_DATA_REGION, pricing=Unreachable())[0].on_demand("g5.xlarge") is None
    other = prices_for(cloud_prices, region="eu-north-1", pricing=Unreachable())[0].on_demand("g5.xlarge")
    assert other is not None and other.pricing == "on-demand eu-north-1 price snapshot of 2025-08"


def test_a_price_list_product_is_read_from_its_on_demand_terms(cloud_prices: Cloud) -> None:
    found, published = price_list(boto3.client("pricing", region_name="us-east-1"), REGION)
    assert found["g5.xlarge"] == 1.006 and all(usd > 0 for usd in found.values())
    assert published == price_snapshot(REGION)["as_of"]  # type: ignore[index]


def test_a_price_list_aws_refuses_is_said_and_asked_again_after_five_minutes(
    cloud_prices: Cloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    from botocore.stub import Stubber

    from functions.shared.adapters import prices

    class Clock:
        """The adapter's clock: monotonic time set by the test, the rest real."""

        monotonic_now = 1000.0

        def monotonic(self) -> float:
            return self.monotonic_now

        def __getattr__(self, name: str) -> Any:
            return getattr(time, name)

    clock = Clock()
    monkeypatch.setattr(prices, "time", clock)
    # Given the Price List refusing GetProducts (an organisation's policy); the Stubber fails any call not queued
    pricing = boto3.client("pricing", region_name="us-east-1")
    stubber = Stubber(pricing)
    stubber.add_client_error("get_products", service_error_code="AccessDeniedException", http_status_code=400)
    stubber.activate()
    adapter, _ = prices_for(cloud_prices, pricing=pricing)

    # When pricing / Then the snapshot prices, and the adapter says why the Price List did not
    quote = adapter.on_demand("g5.xlarge")
    assert quote is not None and "price snapshot of" in quote.pricing
    unavailable = adapter.price_list_unavailable()
    assert unavailable is not None
    assert (unavailable.operation, unavailable.code) == ("GetProducts", "AccessDeniedException")
    # Within five minutes the failure stands: no second GetProducts
    clock.monotonic_now += 299
    assert adapter.on_demand("g6.xlarge") is not None
    stubber.assert_no_pending_responses()
    # Past them, the Price List is asked again (here: throttled past botocore's retries)
    clock.monotonic_now += 2
    stubber.add_client_error("get_products", service_error_code="ThrottlingException", http_status_code=400)
    assert adapter.on_demand("g6.xlarge") is not None
    stubber.assert_no_pending_responses()
    unavailable = adapter.price_list_unavailable()
    assert unavailable is not None and unavailable.code == "ThrottlingException"


def test_on_demand_prices_never_come_from_a_types_capacity_block_product(cloud_prices: Cloud) -> None:
    # Given a type the Price List also lists as a Capacity Block product (the local cloud's lists both)
    pricing = boto3.client("pricing", region_name="us-east-1")
    everything = pricing.get_products(ServiceCode="AmazonEC2", Filters=[
        {"Type": "TERM_MATCH", "Field": "regionCode", "Value": REGION},
        {"Type": "TERM_MATCH", "Field": "instanceType", "Value": "p5.48xlarge"},
    ])["PriceList"]  # fmt: skip
    assert {json.loads(p)["product"]["attributes"]["marketoption"] for p in everything} == {"OnDemand", "CapacityBlock"}

    # When the Price List is read / Then the type's price is its on-demand one
    found, _ = price_list(pricing, REGION)
    assert found["p5.48xlarge"] == price_snapshot(REGION)["prices"]["p5.48xlarge"]  # type: ignore[index]
