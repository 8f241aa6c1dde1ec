"""What the API answers about teams (`GET /teams`). Pure."""

from __future__ import annotations

from pydantic import Field

from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.teams.commitment import BudgetState, usd
from functions.shared.domain.teams.config import TeamConfig


class TeamView(DomainModel):
    """One team's budget, what it spent and holds committed, and its GPUs."""

    team: str
    budget_usd_per_day: float | None = None
    budget_usd_per_month: float | None = None
    spent_usd_today: float = Field(default=0.0, description="What its jobs submitted today (UTC) cost, once priced")
    spent_usd_month: float = Field(default=0.0, description="Likewise, this month")
    committed_usd: float = Field(
        default=0.0, description="The worst case its unfinished jobs of this month still hold of its budget"
    )
    max_gpus: int | None = Field(default=None, description="GPUs its running jobs may hold at once (null: no cap)")
    gpus_in_use: int | None = Field(
        default=None, description="GPUs its jobs hold now, as AWS Batch counts them (null: no cap to count against)"
    )
    weight: float = Field(default=1, description="Its share of a pool's GPUs against other teams'")


class TeamList(DomainModel):
    """Body of `GET /teams` (a member or viewer: its own team)."""

    teams: list[TeamView]


def team_view(name: str, config: TeamConfig | None, state: BudgetState, gpus_in_use: int | None) -> TeamView:
    """A team's view from its configuration, its ledger and the GPUs Batch says it holds."""
    return TeamView(
        team=name,
        budget_usd_per_day=None if config is None or config.budget_usd_per_day is None else config.budget_usd_per_day,
        budget_usd_per_month=None
        if config is None or config.budget_usd_per_month is None
        else config.budget_usd_per_month,
        spent_usd_today=usd(state.spent_day),
        spent_usd_month=usd(state.spent_month),
        committed_usd=usd(state.committed_month),
        max_gpus=None if config is None else config.max_gpus,
        gpus_in_use=gpus_in_use,
        weight=1 if config is None else config.weight,
    )


class ForbiddenBody(DomainModel):
    """Body of the 403 `Forbidden`: who was refused what, as which role (null: in no team)."""

    error: str = "Forbidden"
    field: str | None = None
    message: str
    principal: str | None = None
    role: str | None = None
    action: str | None = None
