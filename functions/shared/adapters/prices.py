"""Hourly prices. On-demand: the AWS Price List API for the deployment's region (GetProducts, cached in the
table for a day and in the process for an hour), else the bundled, dated snapshot of that region
(functions/shared/data/prices/<region>.json, written by `make prices`), else none: a region GPU Pilot has no
data for is never priced as another. Spot: EC2's spot price history (spot.py).

IAM: pricing:GetProducts has no resource types (grant on `*`); the Price List API answers in us-east-1. A Price
List that cannot be read (refused, or failing past botocore's retries) is asked again after five minutes, and
`price_list_unavailable` says why prices come from the snapshot meanwhile.
"""

from __future__ import annotations

import json
import re
import threading
import time
import zlib
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

from botocore.exceptions import ClientError

from functions.shared import constants as c
from functions.shared.adapters.base import AWS_ERRORS, ClientAdapter, signal_unavailable
from functions.shared.adapters.clients import client
from functions.shared.adapters.spot import Ec2SpotMarket
from functions.shared.domain.core.errors import SignalUnavailable
from functions.shared.domain.core.money import PriceQuote
from functions.shared.observability import logger

# What this module's calls are authorized against (the IAM drift check holds it to that).
IAM_ACTIONS = ("pricing:GetProducts", "dynamodb:GetItem", "dynamodb:PutItem")
# functions/shared/data/prices/<region>.json: one dated snapshot per region.
SNAPSHOT_DIR = "prices"
REGION_NAME = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d+$")
PRICE_LIST_REGION = "us-east-1"
TABLE_TTL_SECONDS = 86400
PROCESS_TTL_SECONDS = 3600
# A Price List that could not be read is asked again this much later (the snapshot prices meanwhile).
FAILURE_TTL_SECONDS = 300
PRICES_PARTITION = "PRICES"
# Linux, shared tenancy, nothing pre-installed, not a capacity reservation, sold on demand: what Batch's on-demand
# instances are. `marketoption` keeps out the Capacity Block product of the same type (`CapacityBlock`), whose
# on-demand term would otherwise stand in for (or overwrite) the type's on-demand price.
FILTERS = {
    "operatingSystem": "Linux",
    "tenancy": "Shared",
    "preInstalledSw": "NA",
    "capacitystatus": "Used",
    "marketoption": "OnDemand",
    "instanceFamily": "GPU instance",
}


@cache
def price_snapshot(region: str) -> dict[str, Any] | None:
    """The bundled on-demand snapshot of `region` (source, as_of, prices), or None: GPU Pilot has none for it."""
    if not REGION_NAME.match(region):
        return None
    path = resources.files("functions.shared.data").joinpath(SNAPSHOT_DIR).joinpath(f"{region}.json")
    return dict(json.loads(path.read_text())) if path.is_file() else None


def snapshot_regions() -> list[str]:
    """The regions GPU Pilot bundles on-demand prices for."""
    folder = resources.files("functions.shared.data").joinpath(SNAPSHOT_DIR)
    return sorted(entry.name.removesuffix(".json") for entry in folder.iterdir() if entry.name.endswith(".json"))


def snapshot_table(region: str) -> dict[str, float]:
    """instance type -> hourly USD in `region`'s snapshot (empty without one)."""
    snapshot = price_snapshot(region)
    return {t: float(p) for t, p in snapshot["prices"].items()} if snapshot else {}


class SnapshotPrices:
    """On-demand prices from the bundled snapshot of one region."""

    def __init__(self, region: str = "us-east-1") -> None:
        self._priced_region = region

    def on_demand(self, instance_type: str) -> PriceQuote | None:
        snapshot = price_snapshot(self._priced_region)
        if snapshot is None or instance_type not in snapshot["prices"]:
            return None
        return PriceQuote(
            hourly_usd=float(snapshot["prices"][instance_type]),
            pricing=f"on-demand {self._priced_region} price snapshot of {snapshot['as_of']}",
        )


def price_list(pricing: Any, region: str) -> tuple[dict[str, float], str | None]:
    """(instance type -> on-demand Linux hourly USD of every GPU instance in `region`, the day the newest of those
    prices was published), from GetProducts: each price list item carries its `publicationDate`."""
    filters = [{"Type": "TERM_MATCH", "Field": "regionCode", "Value": region}]
    filters += [{"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in FILTERS.items()]
    found: dict[str, float] = {}
    published: str | None = None
    for page in pricing.get_paginator("get_products").paginate(ServiceCode="AmazonEC2", Filters=filters):
        for raw in page["PriceList"]:
            product = json.loads(raw)
            instance_type = product.get("product", {}).get("attributes", {}).get("instanceType")
            for term in (product.get("terms", {}).get("OnDemand") or {}).values():
                for dimension in (term.get("priceDimensions") or {}).values():
                    usd = float(dimension.get("pricePerUnit", {}).get("USD", 0) or 0)
                    if instance_type and usd > 0:
                        found[instance_type] = usd
                        day = publication_day(str(product.get("publicationDate") or ""))
                        published = max(published or "", day or "") or None
    return found, published


def publication_day(published: str) -> str | None:
    """The day (YYYY-MM-DD) of a Price List item's `publicationDate` (an ISO 8601 time), or None when it is not one."""
    try:
        return datetime.fromisoformat(published.replace("Z", "+00:00")).date().isoformat()
    except ValueError:
        return None


def snapshot_day(as_of: str) -> str:
    """The first day a snapshot's date allows (a snapshot dated by its month, 2025-08, is of 2025-08-01 at the
    earliest): the day its prices were published, as a Price List item says it."""
    return as_of if len(as_of) == len("YYYY-MM-DD") else f"{as_of}-01"


class MarketPrices(ClientAdapter):
    """Implements ports.Prices: on-demand from the Price List (cached), spot from the live spot market."""

    service = "dynamodb"

    def __init__(
        self, region: str, table_name: str, spot_market: Ec2SpotMarket, dynamodb: Any | None = None,
        pricing: Any | None = None,
    ) -> None:  # fmt: skip
        super().__init__(dynamodb)
        self._priced_region, self._table_name, self._spot = region, table_name, spot_market
        self._pricing = pricing
        self._snapshot = SnapshotPrices(region)
        self._lock = threading.Lock()
        # (monotonic time it expires, the Price List's quotes, why it could not be read)
        self._cached: tuple[float, dict[str, PriceQuote], SignalUnavailable | None] | None = None

    def on_demand(self, instance_type: str) -> PriceQuote | None:
        return self._table()[0].get(instance_type) or self._snapshot.on_demand(instance_type)

    def price_list_unavailable(self) -> SignalUnavailable | None:
        return self._table()[1]

    def spot(self, instance_types: list[str], zones: list[str]) -> dict[str, dict[str, PriceQuote]]:
        return self._spot.spot_prices(instance_types, zones)

    def spot_over(self, instance_type: str, zones: list[str], start: str, stop: str) -> PriceQuote | None:
        return self._spot.spot_over(instance_type, zones, start, stop)

    def _table(self) -> tuple[dict[str, PriceQuote], SignalUnavailable | None]:
        """The Price List's quotes of the region (cached), and why it could not be read, if it could not."""
        with self._lock:
            if self._cached is None or time.monotonic() >= self._cached[0]:
                prices, error = self._read()
                ttl = FAILURE_TTL_SECONDS if error else PROCESS_TTL_SECONDS
                self._cached = (time.monotonic() + ttl, prices, error)
            return self._cached[1], self._cached[2]

    def _read(self) -> tuple[dict[str, PriceQuote], SignalUnavailable | None]:
        key = {c.TABLE_PK: {"S": PRICES_PARTITION}, c.TABLE_SK: {"S": self._priced_region}}
        item = self._aws.get_item(TableName=self._table_name, Key=key).get("Item")
        if item and int(item[c.TTL_ATTRIBUTE]["N"]) > time.time():
            fetched_at, prices = item["fetched_at"]["S"], json.loads(zlib.decompress(item["prices_z"]["B"]))
        else:
            try:
                prices, published = price_list(
                    self._pricing or client("pricing", PRICE_LIST_REGION, hint=True), self._priced_region
                )
            except AWS_ERRORS as error:
                logger.warning(
                    "Price List unavailable: on-demand prices from the snapshot", extra={"error": str(error)}
                )
                return {}, signal_unavailable("GetProducts", error)
            # The prices' own date (their publication), else the day they were read.
            fetched_at = published or time.strftime("%Y-%m-%d", time.gmtime())
            self._store(key, prices, fetched_at)
        source = f"on-demand {self._priced_region} AWS Price List of {fetched_at}"
        return {t: PriceQuote(hourly_usd=usd, pricing=source) for t, usd in prices.items()}, None

    def _store(self, key: dict[str, Any], prices: dict[str, float], fetched_at: str) -> None:
        item = key | {
            "prices_z": {"B": zlib.compress(json.dumps(prices, sort_keys=True).encode())},
            "fetched_at": {"S": fetched_at},
            c.TTL_ATTRIBUTE: {"N": str(int(time.time()) + TABLE_TTL_SECONDS)},
        }
        try:
            self._aws.put_item(TableName=self._table_name, Item=item)
        except ClientError as error:  # a cache: the next reader asks the Price List again
            logger.warning("could not cache the Price List's prices", extra={"error": str(error)})
