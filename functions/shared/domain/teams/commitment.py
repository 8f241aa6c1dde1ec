"""What a job holds of its team's budget, and a team's ledger as it stands: the records carry these (budget.py
decides with them). Pure."""

from __future__ import annotations

from pydantic import Field

from functions.shared.domain.core.model import DomainModel

# Dollars are kept to a millionth (a commitment, a budget's sums): the DynamoDB numbers are exact at that.
PLACES = 6


def usd(value: float) -> float:
    return round(value, PLACES)


class Commitment(DomainModel):
    """What a job holds of its team's budget, in the day and the month it was submitted in (UTC), and the budget it
    was accepted under."""

    team: str
    day: str = Field(description="YYYY-MM-DD")
    month: str = Field(description="YYYY-MM")
    usd: float = Field(description="The worst case committed now (raised when an attempt on a dearer offering began)")
    budget_usd_per_day: float | None = None
    budget_usd_per_month: float | None = None
    settled_usd: float | None = Field(
        default=None, description="What the job cost when its commitment was settled (released): null while open"
    )


class BudgetState(DomainModel):
    """A team's budget as its ledger has it: spent and committed, this day and this month."""

    spent_day: float = 0.0
    committed_day: float = 0.0
    spent_month: float = 0.0
    committed_month: float = 0.0
