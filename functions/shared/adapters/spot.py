"""Amazon EC2's spot market: the latest spot price per type and zone, and spot placement scores.

IAM: ec2:DescribeSpotPriceHistory, ec2:GetSpotPlacementScores and ec2:DescribeAvailabilityZones have no
resource types (grant on `*`). GetSpotPlacementScores scores a set of types together, for the zones of the
region, and AWS limits how many configurations may be asked a day: one call per plan, cached ten minutes.
A call AWS refuses, or that fails past botocore's retries, is SignalUnavailable: selection ranks without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from functions.shared.adapters.base import AWS_ERRORS, ClientAdapter, TtlCache, signal_unavailable
from functions.shared.adapters.clients import client
from functions.shared.domain.core.money import PriceQuote, time_weighted
from functions.shared.domain.core.vocabulary import counted

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("ec2:DescribeSpotPriceHistory", "ec2:GetSpotPlacementScores", "ec2:DescribeAvailabilityZones")
PRODUCT = "Linux/UNIX"
PRICE_TTL_SECONDS = 300
SCORE_TTL_SECONDS = 600


class Ec2SpotMarket(ClientAdapter):
    """The spot side of ports.Prices and ports.Availability."""

    service = "ec2"
    hint = True  # a plan's spot prices and placement scores; an ended attempt's price is not one (_billing)

    def __init__(self, region: str, ec2: Any | None = None) -> None:
        super().__init__(ec2, region)
        self._region: str = region
        self._prices = TtlCache(PRICE_TTL_SECONDS)
        self._scores = TtlCache(SCORE_TTL_SECONDS)
        self._zone_names: dict[str, str] | None = None

    def spot_prices(self, instance_types: list[str], zones: list[str]) -> dict[str, dict[str, PriceQuote]]:
        """instance type -> zone -> the latest spot price there, in one paginated DescribeSpotPriceHistory."""
        key = (tuple(instance_types), tuple(zones))
        cached = self._prices.get(key)
        if cached is not None:
            return dict(cached)
        latest: dict[tuple[str, str], dict[str, Any]] = {}
        if instance_types and zones:
            pages = self._aws.get_paginator("describe_spot_price_history").paginate(
                InstanceTypes=instance_types,
                ProductDescriptions=[PRODUCT],
                StartTime=datetime.now(UTC),
                Filters=[{"Name": "availability-zone", "Values": zones}],
            )
            for entry in _entries(pages):
                where = (entry["InstanceType"], entry["AvailabilityZone"])
                if where not in latest or _stamp(entry) > _stamp(latest[where]):
                    latest[where] = entry
        found: dict[str, dict[str, PriceQuote]] = {}
        for (instance_type, zone), entry in latest.items():
            if zone in zones:
                found.setdefault(instance_type, {})[zone] = PriceQuote(
                    hourly_usd=float(entry["SpotPrice"]),
                    pricing=f"spot price history, {zone}, {_stamp(entry).isoformat(timespec='seconds')}",
                )
        self._prices.put(key, found)
        return found

    def spot_over(self, instance_type: str, zones: list[str], start: str, stop: str) -> PriceQuote | None:
        """The spot price of the type averaged over [start, stop] (time-weighted), in the cheapest of the
        zones: Batch does not say which zone an attempt ran in."""
        if not zones:
            return None
        points: dict[str, list[tuple[str, float]]] = {}
        pages = self._billing.get_paginator("describe_spot_price_history").paginate(
            InstanceTypes=[instance_type],
            ProductDescriptions=[PRODUCT],
            StartTime=datetime.fromisoformat(start.replace("Z", "+00:00")),
            EndTime=datetime.fromisoformat(stop.replace("Z", "+00:00")),
            Filters=[{"Name": "availability-zone", "Values": zones}],
        )
        for entry in _entries(pages):
            stamp = _stamp(entry).astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            points.setdefault(entry["AvailabilityZone"], []).append((stamp, float(entry["SpotPrice"])))
        averages = {z: time_weighted(p, start, stop) for z, p in points.items() if z in zones}
        priced = {z: usd for z, usd in averages.items() if usd is not None}
        if not priced:
            return None
        zone = min(priced, key=lambda z: (priced[z], z))
        return PriceQuote(
            hourly_usd=priced[zone],
            pricing=f"spot price history, {zone}, time-weighted over the attempt "
            f"({counted(len(points[zone]), 'price point')})",
        )

    @property
    def _billing(self) -> Any:
        """The client that prices an ended attempt: what it cost is no hint, it takes the standard retries."""
        return self._given or client(self.service, self._region)

    def placement_scores(self, instance_types: list[str]) -> dict[str, dict[str, int]]:
        """instance type -> zone name -> placement score (1-10) of the types as one flexible request: AWS scores
        a set of types together (and scores fewer than three types low), so each type gets its set's score."""
        key = tuple(sorted(instance_types))
        scores = self._scores.get(key)
        if scores is None:
            scores = {}
            if key:
                try:
                    answer = self._aws.get_spot_placement_scores(
                        InstanceTypes=list(key),
                        TargetCapacity=1,
                        TargetCapacityUnitType="units",
                        SingleAvailabilityZone=True,
                        RegionNames=[self._region],
                    )
                except AWS_ERRORS as error:
                    raise signal_unavailable("GetSpotPlacementScores", error) from error
                names = self._zone_name_of()
                scores = {
                    names[s["AvailabilityZoneId"]]: int(s["Score"])
                    for s in answer.get("SpotPlacementScores", [])
                    if s.get("AvailabilityZoneId") in names
                }
            self._scores.put(key, scores)
        return {instance_type: dict(scores) for instance_type in instance_types if scores}

    def _zone_name_of(self) -> dict[str, str]:
        """Zone id (use1-az1) -> zone name (us-east-1a): placement scores name zones by id."""
        if self._zone_names is None:
            try:
                zones = self._aws.describe_availability_zones()["AvailabilityZones"]
            except AWS_ERRORS as error:
                raise signal_unavailable("DescribeAvailabilityZones", error) from error
            self._zone_names = {z["ZoneId"]: z["ZoneName"] for z in zones}
        return self._zone_names


def _entries(pages: Any) -> Iterator[dict[str, Any]]:
    """Every spot price of DescribeSpotPriceHistory's pages (each page is a call: any may fail)."""
    try:
        for page in pages:
            yield from page["SpotPriceHistory"]
    except AWS_ERRORS as error:
        raise signal_unavailable("DescribeSpotPriceHistory", error) from error


def _stamp(entry: dict[str, Any]) -> datetime:
    stamp = entry["Timestamp"]
    return stamp if isinstance(stamp, datetime) else datetime.fromisoformat(str(stamp))
