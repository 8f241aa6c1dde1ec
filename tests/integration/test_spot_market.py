"""The spot market adapter against the local cloud's EC2 (moto adapted): one price per type and zone, the
latest; placement scores by zone name although EC2 answers by zone id; answers cached."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from functions.shared.adapters.spot import Ec2SpotMarket
from gpupilot.localcloud.moto_adaptations import SpotMarket, adapted_moto

REGION = "us-east-1"
ZONES = ["us-east-1a", "us-east-1b"]
# AWS scores fewer than three types low whatever the capacity: placement scores are asked for three at least.
SCORED = ["g4dn.xlarge", "g5.xlarge", "g6.xlarge"]


@pytest.fixture
def market() -> Iterator[Ec2SpotMarket]:
    world = SpotMarket(offered=lambda t: ZONES if t != "g6.xlarge" else ZONES[:1], hourly_usd={"g5.xlarge": 0.42},
                       placement_score=dict.fromkeys(SCORED, 6))  # fmt: skip
    with mock_aws(), adapted_moto(spot_market=world):
        yield Ec2SpotMarket(REGION, boto3.client("ec2", region_name=REGION))


def test_spot_prices_are_per_type_and_zone_of_the_zones_asked(market: Ec2SpotMarket) -> None:
    prices = market.spot_prices(["g5.xlarge", "g6.xlarge"], ["us-east-1b"])
    assert {t: {z: q.hourly_usd for z, q in by_zone.items()} for t, by_zone in prices.items()} == {
        "g5.xlarge": {"us-east-1b": 0.42}
    }
    assert prices["g5.xlarge"]["us-east-1b"].pricing.startswith("spot price history, us-east-1b, ")


def test_placement_scores_name_zones_and_are_cached(market: Ec2SpotMarket) -> None:
    scored = {instance_type: {"us-east-1a": 6, "us-east-1b": 6} for instance_type in SCORED}
    assert market.placement_scores(SCORED) == scored
    calls: list[str] = []
    market._aws.meta.events.register("before-call.ec2", lambda model, **_: calls.append(model.name))
    assert market.placement_scores(SCORED) == scored
    assert calls == []


def test_a_spot_price_over_an_interval_is_its_time_weighted_average_in_the_cheapest_zone(
    market: Ec2SpotMarket,
) -> None:
    quote = market.spot_over("g5.xlarge", ZONES, "2026-11-23T10:00:00.000Z", "2026-11-23T11:00:00.000Z")
    assert quote is not None and quote.hourly_usd == 0.42
    assert quote.pricing.startswith("spot price history, us-east-1a, time-weighted over the attempt")
    assert market.spot_over("g5.xlarge", [], "2026-11-23T10:00:00.000Z", "2026-11-23T11:00:00.000Z") is None
