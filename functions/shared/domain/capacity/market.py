"""What a plan reads, as plain data: what the region's zones offer and the memory of unavailable offerings, the
market's and the account's signals (prices, quotas, spot prices and placement scores, reservations), read once before
the planning walk (planning.py) and handed to it."""

from __future__ import annotations

from pydantic import Field

from functions.shared.domain.capacity.catalog import GpuType
from functions.shared.domain.capacity.quotas import QuotaState
from functions.shared.domain.capacity.unavailable import UnavailableOffering
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.money import PriceQuote
from functions.shared.domain.core.vocabulary import CapacityType, MarketSignal
from functions.shared.domain.reservations.reservation import Reservation


class AvailabilitySnapshot(DomainModel):
    """What the region offers right now, as plain data."""

    zones: list[str]
    offered: dict[str, list[str]] = Field(description="instance type -> zones that offer it")
    unavailable: set[str] = Field(default_factory=set, description="'capacity:type:zone' remembered as unavailable")
    remembered: dict[str, UnavailableOffering] = Field(
        default_factory=dict, description="Why each offering of `unavailable` was remembered, and until when"
    )


class SignalGap(DomainModel):
    """A market signal this plan could not read, and AWS's answer: the plan ranks without it."""

    signal: MarketSignal
    operation: str = Field(description="The AWS call that failed, e.g. GetSpotPlacementScores")
    code: str = Field(description="AWS's error code (AccessDeniedException), or the SDK's error when none came back")
    subject: str | None = Field(default=None, description="What of the signal was missing, e.g. a quota code")


class MarketSignals(DomainModel):
    """What the account and the market say about running a type now, as plain data (None: not asked)."""

    spot_prices: dict[str, dict[str, PriceQuote]] = Field(
        default_factory=dict, description="instance type -> zone -> latest spot price there"
    )
    quotas: dict[str, QuotaState | None] | None = Field(
        default=None, description="Service Quotas code -> the account's vCPU quota (None: Service Quotas has none)"
    )
    placement_scores: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="instance type -> zone -> spot placement score (1-10)"
    )
    max_vcpus: int | None = Field(default=None, description="maxvCpus of a pool's compute environment")
    unavailable: list[SignalGap] = Field(default_factory=list, description="Signals that could not be read")


class SignalNeeds(DomainModel):
    """What a plan for a request needs read: the types its shape fits, on which capacity types, under which
    vCPU quotas."""

    fitting: list[str]
    capacities: list[CapacityType]
    quota_codes: list[str]


class Signals(DomainModel):
    """Everything a plan weighs, read once before it is made."""

    catalog: dict[str, GpuType]
    availability: AvailabilitySnapshot
    on_demand: dict[str, PriceQuote] = Field(
        default_factory=dict, description="instance type -> on-demand price (absent: no known price)"
    )
    market: MarketSignals = Field(default_factory=MarketSignals)
    arm64_ami: bool = Field(default=True, description="Whether a custom NVIDIA AMI for Graviton is configured")
    region: str | None = Field(default=None, description="The capacity region these signals are of")
    reservations: list[Reservation] = Field(
        default_factory=list, description="The account's Capacity Reservations and Capacity Blocks in the region"
    )
    now: str = Field(default="", description="When the plan is made (ISO): reservations begin and end in time")
    sold_elsewhere: set[str] = Field(
        default_factory=set, description="GPU types the plan's other regions sell and this one does not"
    )
