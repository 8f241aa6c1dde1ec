"""Capacity regions: each region of the world answered from its own part.

21. Capacity regions: 3., 5., 6. and 10. answer each region from its own part of the world (`regions.<name>`): the
   region of the call's endpoint (Service Quotas and spot placement scores are per account and region:
   GetServiceQuota, GetSpotPlacementScores `RegionNames`), and a compute environment's region from its ARN.

tests/integration/test_moto_adaptations.py holds a test per adaptation that fails if moto changes under it.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpupilot.localcloud.moto_adaptations.ec2 import SpotMarket


@dataclass(frozen=True)
class RegionWorldView:
    """5., 6. and 10. for a capacity region beside the home one: its zones and offerings, quotas and spot market."""

    zones: list[str]
    offered: dict[str, list[str]]
    quotas: dict[str, int]
    spot: SpotMarket
