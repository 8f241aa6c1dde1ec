"""What `GET /costs` answers: cost per day, grouped, and the waste beside it (docs/openapi.json)."""

from __future__ import annotations

from pydantic import Field

from functions.shared.domain.core.model import DomainModel


class DailyCost(DomainModel):
    date: str
    usd: float
    marginal_usd: float = Field(default=0.0, description="What those attempts added to the bill (reserved: nothing)")
    by_gpu_type: dict[str, float]
    by_job_name: dict[str, float]
    by_capacity_type: dict[str, float] = Field(
        default_factory=dict, description="on-demand, spot, reserved (ODCRs) and capacity-block, each apart"
    )
    by_region: dict[str, float] = Field(default_factory=dict)


class CostGroup(DomainModel):
    key: str
    usd: float
    marginal_usd: float = Field(default=0.0, description="What its attempts added to the bill (reserved: nothing)")
    attempts: int
    region: str | None = Field(default=None, description="The region of the group's attempts, when they share one")


class Waste(DomainModel):
    """What the fleet cost without serving a job (instances never registered, registered without GPUs, agent
    disconnected, left alive in an idle pool; the share of an instance no job held while its jobs ran,
    `unused_share`), by the day the instance launched; and the hours of the account's reservations no instance used
    (`reservation_idle`), by the day they passed."""

    usd: float = 0.0
    by_reason: dict[str, float] = Field(default_factory=dict)
    by_pool: dict[str, float] = Field(default_factory=dict)
    by_reservation: dict[str, float] = Field(
        default_factory=dict, description="reservation_idle by reservation (cr-...): reserved hours no instance used"
    )
    billed_to: dict[str, str] = Field(
        default_factory=dict,
        description="Whose bill each reservation of by_reservation is on: the account its idle hours are billed to "
        "(its owner's, unless the owner assigned them to another account of its organization)",
    )


class CostReport(DomainModel):
    """Body of `GET /costs`: what every ended attempt of the jobs created in the range cost (whatever the job
    came to: succeeded, failed, cancelled, fallen back), per UTC day of the job's creation, and by `group_by`; and
    what they added to the bill. Every total is the exact sum of its attempts."""

    date_from: str = Field(serialization_alias="from")
    date_to: str = Field(serialization_alias="to")
    total_usd: float
    marginal_usd: float = Field(
        default=0.0,
        description="What the attempts added to the bill: total_usd less what they ran on reserved capacity with room, "
        "which the account pays for whether used or not (its idle hours are waste, reservation_idle)",
    )
    days: list[DailyCost]
    group_by: str | None = Field(
        default=None, description="day, gpu_type, job_name, capacity_type, region, team or owner"
    )
    groups: list[CostGroup] = Field(default_factory=list, description="One per key of group_by, costliest first")
    waste: Waste = Field(default_factory=Waste, description="Next to the job costs: not included in total_usd")
