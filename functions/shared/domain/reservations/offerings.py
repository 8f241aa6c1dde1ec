"""Capacity Blocks for ML on offer: what DescribeCapacityBlockOfferings answers, and the durations it takes. Pure.

EC2 takes a block's duration in whole days ("You must specify the duration in 1-day increments up 14 days, and in
7-day increments up to 182 days": DescribeCapacityBlockOfferings, CapacityDurationHours) and answers offerings whose
length is not always whole hours: blocks end at 11:30 UTC, so one that begins sooner lasts `CapacityBlockDurationHours`
plus `CapacityBlockDurationMinutes` (CapacityBlockOffering: "if a Capacity Block starts at 08:55 and ends at 11:30,
the minutes field would be 35"). An offering is asked for again, before it is bought, with the days it was listed for.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from functions.shared.domain.core.clock import seconds_between
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.reservations.reservation import described_time

# Capacity Blocks last 1 to 14 days in 1-day steps, then up to 182 days in 7-day steps, of 1 to 64 instances.
MAX_BLOCK_INSTANCES = 64
MAX_BLOCK_DAYS = 182


class BlockOffering(DomainModel):
    """A Capacity Block for ML that can be bought (DescribeCapacityBlockOfferings)."""

    offering_id: str = Field(description="cb-...: what `gpupilot reserve` buys")
    instance_type: str
    zone: str
    count: int
    starts_at: str
    ends_at: str
    hours: float = Field(description="Its length: EC2's hours and minutes (a block that begins today may end sooner)")
    upfront_usd: float = Field(description="The total price, paid up front")
    currency: str = "USD"
    region: str | None = Field(default=None, description="The capacity region EC2 offers it in")
    days: int | None = Field(
        default=None, description="The whole days it was asked for: what a purchase asks EC2 for again"
    )


def offering_of(described: dict[str, Any], days: int | None = None) -> BlockOffering:
    """A Capacity Block offering from DescribeCapacityBlockOfferings (its fee is a string: read as a number), asked for
    `days` days."""
    start, end = described_time(described["StartDate"]), described_time(described["EndDate"])
    assert start is not None and end is not None
    whole = described.get("CapacityBlockDurationHours")
    hours = whole + (described.get("CapacityBlockDurationMinutes") or 0) / 60 if whole is not None else None
    return BlockOffering(
        offering_id=str(described["CapacityBlockOfferingId"]),
        instance_type=str(described.get("InstanceType", "")),
        zone=str(described.get("AvailabilityZone", "")),
        count=int(described.get("InstanceCount") or 0),
        starts_at=start,
        ends_at=end,
        hours=round(float(hours if hours is not None else seconds_between(start, end) / 3600), 4),
        upfront_usd=float(described.get("UpfrontFee") or 0),
        currency=str(described.get("CurrencyCode") or "USD"),
        days=days,
    )


def block_days_problem(days: int) -> str | None:
    """Why a Capacity Block of `days` cannot be offered: 1 to 14 days, then whole weeks up to 182 days."""
    if days < 1 or days > MAX_BLOCK_DAYS or (days > 14 and days % 7):
        return f"a Capacity Block lasts 1 to 14 days, or whole weeks up to {MAX_BLOCK_DAYS} days"
    return None
