"""EC2: its offerings and spot market from the world, and each simulated instance's console.

5. EC2 offerings: the instance type offerings per zone come from the world, not moto's static data.

10. EC2's spot market: moto prices every spot offering at $0.00001 from its own offerings, and has no
   GetSpotPlacementScores; here spot prices and placement scores come from the world (`spot.<type>`):
   `hourly_usd` (default: 40% of the type's on-demand snapshot price in the world's region),
   `placement_score` (default 9; 1 where the world's spot `capacity` is `none`), for the zones that offer
   the type. Asked about fewer than three instance types, AWS scores low whatever the capacity ("If you
   specify one or two instance types [...] the returned placement score will always be low":
   GetSpotPlacementScores, InstanceType.N); so does the local cloud (3 at most).

17. EC2 GetConsoleOutput: moto answers every instance with one fixed sample of a 2006 Xen kernel's boot, and
   ignores `Latest`. Here an instance of the simulated fleet answers with its own console (its boot, the boot
   check's verdict, its kernel's GPU errors), the latest 64 KB, as EC2 keeps "Only the most recent 64 KB of console
   output" (GetConsoleOutput); other instances keep moto's sample.

23. EC2 DescribeLaunchTemplateVersions: moto answers a version's LaunchTemplateData as it was created. EC2 answers
   it in its response shape (ResponseLaunchTemplateData, EC2 API Reference), with fields the request shape
   (RequestLaunchTemplateData) does not have: `MetadataOptions.State` ("pending" or "applied": "The state of the
   metadata option changes"), `Operator.Managed` and `Operator.HiddenByDefault`, and
   `NetworkInterfaces[].Ipv6Addresses[].IsPrimaryIpv6`; here too, so a copy of one version into CreateLaunchTemplate
   that keeps them fails as botocore's parameter validation fails it against AWS.

24. EC2 DescribeInstanceTypes per region: moto describes every type it knows in every region. EC2 describes the
   types of the region asked ("Describes the specified instance types": each region sells its own); here a type the
   world's region does not sell (`instance_types.<type>.sold: false`) is not described there.

27. EC2 DescribeInstances' `instance-lifecycle` filter: moto raises NotImplementedError for it (the server answers
   500). EC2 filters on it ("instance-lifecycle - Indicates whether this is a Spot Instance, a Scheduled Instance, or
   a Capacity Block (spot | scheduled | capacity-block)": DescribeInstances, Filter.N, EC2 API Reference); here too,
   by each instance's lifecycle (none for an on-demand instance, which no value matches).

tests/integration/test_moto_adaptations.py holds a test per adaptation that fails if moto changes under it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpupilot.localcloud.moto_adaptations.patches import Patches


def world_offerings(patches: Patches, region: str, zones: list[str], offered: dict[str, list[str]]) -> None:
    """5. Per-zone instance type offerings of the given types come from the world."""
    from moto.ec2.models.instance_types import INSTANCE_TYPE_OFFERINGS

    by_zone = INSTANCE_TYPE_OFFERINGS["availability-zone"]
    original = list(by_zone.get(region, []))
    kept = [o for o in original if o["InstanceType"] not in offered]
    for instance_type, type_zones in offered.items():
        kept.extend({"InstanceType": instance_type, "Location": z} for z in type_zones if z in zones)
    by_zone[region] = kept
    patches.on_exit(lambda: by_zone.__setitem__(region, original))


# What a simulated spot offering costs when the world does not say: spot is typically well below on-demand.
DEFAULT_SPOT_FRACTION = 0.4


# AWS scores a request of fewer instance types than this low, whatever the capacity; low is 3 at most here.
FEW_TYPES_FOR_A_SCORE = 3


FEW_TYPES_SCORE = 3


@dataclass
class SpotMarket:
    """10. The world's spot market: price and placement score by type, and the zones that offer each."""

    offered: Callable[[str], list[str]]
    hourly_usd: dict[str, float] = field(default_factory=dict)
    placement_score: dict[str, int] = field(default_factory=dict)
    region: str = "us-east-1"

    def price(self, instance_type: str) -> float | None:
        if instance_type in self.hourly_usd:
            return self.hourly_usd[instance_type]
        from functions.shared.adapters.prices import SnapshotPrices

        quote = SnapshotPrices(self.region).on_demand(instance_type)
        return round(quote.hourly_usd * DEFAULT_SPOT_FRACTION, 4) if quote else None


def world_spot_market(patches: Patches, market: SpotMarket, by_region: Mapping[str, SpotMarket] | None = None) -> None:
    """10. DescribeSpotPriceHistory and GetSpotPlacementScores answer from the world, each region its own market
    (`by_region`: the other regions')."""

    def market_of(response: Any) -> SpotMarket:
        return (by_region or {}).get(response.region, market)

    from datetime import UTC, datetime

    from moto.core.responses import ActionResult
    from moto.ec2.responses import EC2Response

    def describe_spot_price_history(self: Any) -> ActionResult:
        types = self._get_param("InstanceTypes", []) or []
        zones = self._filters_from_querystring().get("availability-zone")
        # The world's price holds at all times: answered as the one in effect at StartTime (or now).
        now = self._get_param("StartTime") or datetime.now(UTC).isoformat()
        market = market_of(self)
        history = [
            {"InstanceType": t, "ProductDescription": "Linux/UNIX", "SpotPrice": f"{price:.6f}",
             "AvailabilityZone": zone, "Timestamp": now}
            for t in types
            for price in [market.price(t)]
            if price is not None
            for zone in market.offered(t)
            if zones is None or zone in zones
        ]  # fmt: skip
        return ActionResult({"SpotPriceHistory": history})

    def get_spot_placement_scores(self: Any) -> ActionResult:
        types = self._get_param("InstanceTypes", []) or []
        zone_ids = {z.name: z.zone_id for z in self.ec2_backend.describe_availability_zones()}
        market = market_of(self)
        scores = []
        for zone, zone_id in sorted(zone_ids.items()):
            # A set of types is as likely as its likeliest type offered in the zone; one or two types, low.
            offering = [t for t in types if zone in market.offered(t)]
            if offering:
                score = max(market.placement_score.get(t, 9) for t in offering)
                if len(set(types)) < FEW_TYPES_FOR_A_SCORE:
                    score = min(score, FEW_TYPES_SCORE)
                scores.append({"Region": self.region, "AvailabilityZoneId": zone_id, "Score": score})
        return ActionResult({"SpotPlacementScores": scores})

    patches.replace(EC2Response, "describe_spot_price_history", describe_spot_price_history)
    if hasattr(EC2Response, "get_spot_placement_scores"):
        patches.replace(EC2Response, "get_spot_placement_scores", get_spot_placement_scores)
    else:
        EC2Response.get_spot_placement_scores = get_spot_placement_scores  # type: ignore[attr-defined]
        patches.on_exit(lambda: delattr(EC2Response, "get_spot_placement_scores"))


CONSOLE_BYTES = 64 * 1024


def instance_consoles(patches: Patches, console_of: Callable[[str], str | None]) -> None:
    """17. GetConsoleOutput answers each simulated instance with its own console, its latest 64 KB."""
    from moto.core.responses import ActionResult
    from moto.core.utils import utcnow
    from moto.ec2.responses.general import General
    from moto.ec2.utils import Base64EncodedString

    original = General.get_console_output

    def get_console_output(self: Any) -> Any:
        instance = self.ec2_backend.get_instance(self._get_param("InstanceId"))  # unknown: InvalidInstanceID.NotFound
        text = console_of(instance.id)
        if text is None:
            return original(self)
        latest = text.encode()[-CONSOLE_BYTES:].decode(errors="ignore")
        return ActionResult(
            {"InstanceId": instance.id, "Timestamp": utcnow(), "Output": Base64EncodedString.from_raw_string(latest)}
        )

    patches.replace(General, "get_console_output", get_console_output)


def launch_template_response_fields(patches: Patches) -> None:
    """23. DescribeLaunchTemplateVersions answers each version's data with EC2's response-only fields."""
    from moto.core.responses import ActionResult
    from moto.ec2.responses.launch_templates import LaunchTemplates

    original = LaunchTemplates.describe_launch_template_versions

    def describe_launch_template_versions(self: Any) -> ActionResult:
        answer = original(self)
        result = answer.result
        assert isinstance(result, dict)
        for version in result["LaunchTemplateVersions"]:
            version["LaunchTemplateData"] = _as_described(version["LaunchTemplateData"])
        return ActionResult(result)

    patches.replace(LaunchTemplates, "describe_launch_template_versions", describe_launch_template_versions)


def _as_described(data: dict[str, Any]) -> dict[str, Any]:
    """A version's data as EC2 describes it: with the response's own fields (a copy: moto's stored data unchanged)."""
    described = dict(data)
    if isinstance(described.get("MetadataOptions"), dict):
        described["MetadataOptions"] = described["MetadataOptions"] | {"State": "applied"}
    described["Operator"] = {"Managed": False, "HiddenByDefault": False}
    interfaces = []
    for interface in described.get("NetworkInterfaces") or []:
        addresses = [a | {"IsPrimaryIpv6": False} for a in interface.get("Ipv6Addresses") or []]
        interfaces.append(interface | ({"Ipv6Addresses": addresses} if addresses else {}))
    if interfaces:
        described["NetworkInterfaces"] = interfaces
    return described


def regional_instance_types(patches: Patches, unsold: Mapping[str, set[str]]) -> None:
    """24. DescribeInstanceTypes in a region leaves out the types the world's region does not sell."""
    from moto.ec2.models.instance_types import InstanceTypeBackend

    original = InstanceTypeBackend.describe_instance_types

    def describe_instance_types(self: Any, instance_types: list[str] | None = None, filters: Any = None) -> Any:
        gone = unsold.get(self.region_name, set())
        return [t for t in original(self, instance_types, filters) if t.get("InstanceType") not in gone]

    patches.replace(InstanceTypeBackend, "describe_instance_types", describe_instance_types)


def instance_lifecycle_filter(patches: Patches) -> None:
    """27. DescribeInstances filters on `instance-lifecycle`, by each instance's lifecycle."""
    from moto.ec2 import utils

    mapping = dict(utils.filter_dict_attribute_mapping) | {"instance-lifecycle": "lifecycle"}
    patches.replace(utils, "filter_dict_attribute_mapping", mapping)
