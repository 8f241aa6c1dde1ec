"""What the planning walk (planning.py) answers, as plain data: candidates, rejections and plans, and what each step
hands the next (the offerings found, those blocked, the rejections in their order). What it reads is market.py's."""

from __future__ import annotations

from typing import NamedTuple

from pydantic import Field, computed_field

from functions.shared.domain.capacity.quotas import QuotaState
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.money import billed_capacity
from functions.shared.domain.core.vocabulary import BilledCapacity, CapacityType
from functions.shared.domain.reservations.reservation import Reservation

MARGINAL_USD = (
    "What running the job on it adds to the bill, per hour (marginal_hourly_usd, by the name an attempt's cost gives "
    "it): 0 in a reservation with room"
)


class Candidate(DomainModel):
    """A GPU offering that can run the request, with why it ranks where it does."""

    instance_type: str
    gpu_model: str
    gpus: int
    gpu_memory_gib: float
    vcpus: int
    memory_gib: float
    capacity: CapacityType
    hourly_usd: float | None = Field(
        description="What an hour of the instance costs the account (a reservation: its rate, paid whether used or "
        "not); None: no known price (ranked after priced offerings)"
    )
    marginal_hourly_usd: float | None = Field(
        default=None,
        description="What an hour of it adds to the bill: 0 in a reservation with room, hourly_usd otherwise",
    )
    zones: list[str]
    region: str | None = Field(default=None, description="The capacity region it runs in (None: the home region)")
    score: float
    why: str = Field(default="", description="What the score weighed")
    pricing: str | None = Field(default=None, description="Where the hourly price came from")
    placement_score: int | None = Field(default=None, description="Spot placement score, best zone (1-10)")
    quota_code: str | None = Field(default=None, description="Service Quotas code bounding its vCPUs")
    quota_instances: int | None = Field(default=None, description="Instances of this type the quota allows at once")
    unavailable_zones: list[str] = Field(
        default_factory=list, description="Zones that offer it where this capacity was recently unavailable"
    )
    price_ratio: float | None = Field(
        default=None,
        description="Its hourly price as a multiple of the cheapest candidate it is held against (on-demand: the "
        "cheapest on-demand one; spot: the cheapest of either; within its GPU model with gpu_models): at most "
        "price_band; None: no known price, or a reservation",
    )
    reservation: str | None = Field(
        default=None,
        description="The Capacity Reservation or Capacity Block (cr-...) it runs in: its hourly_usd is the "
        "reservation's rate, its marginal_hourly_usd 0 (the account pays for it either way)",
    )
    reserved: Reservation | None = Field(default=None, description="That reservation, as EC2 described it")
    comparable_to: str | None = Field(
        default=None,
        description="No known price: the priced candidate with as many of the same GPUs (count and model) that holds "
        "it to the price band; null: it has a price, or allow_unpriced let it in",
    )

    @computed_field(description="How it is billed: on-demand, spot, reserved (an ODCR) or capacity-block")
    def capacity_type(self) -> BilledCapacity:
        block = self.reserved is not None and self.reserved.capacity_block
        return billed_capacity(self.capacity, self.reservation, block)

    @property
    def family(self) -> str:
        return self.instance_type.split(".", 1)[0]

    @computed_field(description=MARGINAL_USD)  # type: ignore[prop-decorator]
    @property
    def marginal_usd(self) -> float | None:
        return self.marginal_hourly_usd


class Rejected(DomainModel):
    instance_type: str
    reason: str
    field: str | None = Field(default=None, description="The request field that rules it out, if one does")
    region: str | None = Field(
        default=None, description="The region it is left out in (None: in every region, e.g. its shape)"
    )


class RegionOutcome(DomainModel):
    """A capacity region of the deployment, as a plan weighed it: how many candidates it gave, or why it gave none."""

    region: str
    candidates: int = Field(default=0, description="Candidates in this region")
    left_out: str | None = Field(
        default=None,
        description="Why it gives no candidate: not in the request's regions (or the deployment's default_regions), "
        "no quota, not offered in its zones, ...",
    )


class OutsideBand(DomainModel):
    """The cheaper types that fit the request cannot start now (a quota, the zones' offerings, a recent shortage),
    and the first choice costs more than the default price_band times the cheapest of them: said loudly, and
    refused by POST /jobs when it is beyond the request's own price_band too."""

    instance_type: str = Field(description="The first choice")
    hourly_usd: float
    cheapest_type: str = Field(description="The cheapest type that fits the request, whatever blocks it")
    cheapest_usd: float
    ratio: float = Field(description="hourly_usd / cheapest_usd")
    price_band: float = Field(description="The request's price_band")
    needed_band: float = Field(description="The smallest price_band that allows the first choice")
    refused: bool = Field(description="Beyond the request's price_band: POST /jobs refuses it")
    blocked_by: list[str] = Field(description="What keeps the cheaper types from starting, cheapest fix first")


class PlanRefusal(DomainModel):
    """Why `POST /jobs` refuses the request this plan is for: its 400, less the `rejected` the plan lists already."""

    error: str = Field(default="NoCandidate", description="The error POST /jobs answers with")
    field: str = Field(description="The request field that kept the offerings out")
    message: str


class Plan(DomainModel):
    """Answer of `POST /plan`: candidates in attempt order, why the others were left out (the cheapest fix first),
    what may go wrong."""

    candidates: list[Candidate]
    rejected: list[Rejected]
    warnings: list[str] = Field(default_factory=list)
    regions: list[RegionOutcome] = Field(
        default_factory=list, description="Each capacity region of the deployment: its candidates, or why none"
    )
    outside_band: OutsideBand | None = Field(
        default=None,
        description="Set when the cheaper types that fit are all blocked and the first choice costs more than the "
        "default price_band times the cheapest of them (refused: POST /jobs refuses it unless price_band is widened)",
    )
    refusal: PlanRefusal | None = Field(
        default=None,
        description="Set when POST /jobs refuses this request (the same check): no candidate, or a first choice beyond "
        "the price band; null when it would start it",
    )


class Blocked(NamedTuple):
    """An offering that fits the request but cannot start now, and why: a quota, the zones' offerings, a recent
    shortage. The cheapest of them tells what the request would cost if the account allowed it."""

    instance_type: str
    capacity: CapacityType
    gpu_model: str
    hourly_usd: float | None
    cause: str  # "quota", "offering" or "memory"
    quota: QuotaState | None = None
    vcpus: int = 0

    @property
    def quota_increase(self) -> float:
        """The vCPUs its quota lacks (0 when a quota is not what blocks it)."""
        return self.vcpus - self.quota.vcpus if self.quota else 0.0


class Rejection(NamedTuple):
    """An offering left out, in the words of the step that left it out, with its place in the plan's list."""

    order: tuple[int, float, float, str]  # (kind, the size of its fix or its price, its price, its type)
    rejected: Rejected


# The order rejections are listed in: the cheapest fix first (the smallest quota increase that lets the job run),
# then what the request named wrong, what the zones' offerings or a shortage block, what the price rules out, what
# could never run the request, and last what the request's own filters left out. Reservations asked for come first.
RESERVED_ASKED = -1
QUOTA, UNKNOWN, BLOCKED, PRICE, SHAPE, FILTER, RESERVED_ABOUT = range(7)


def rejection(
    kind: int, instance_type: str, reason: str, field: str | None, first: float = 0.0, second: float = 0.0
) -> Rejection:
    """An offering left out: its kind and the figures that order it among its kind (a quota's increase, a price)."""
    return Rejection((kind, first, second, instance_type), Rejected(instance_type=instance_type, reason=reason,
                                                                    field=field))  # fmt: skip


class Found(NamedTuple):
    """What one region's offerings are for a request: those that can run it, those left out (and why), and those
    that fit it but cannot start now."""

    options: list[Candidate]
    rejections: list[Rejection]
    blocked: list[Blocked]
