"""A team's budget as a hard cap on the worst case of what runs: what a job commits, what is left, the refusal and
the timeout that would fit. Pure.

A job commits its worst-case cost at submit: its first candidate's hourly price (a reservation's rate) x the share of
the instance it holds (as its cost is priced) x its timeout_minutes, against the team's budget of the day and of the
month it was submitted in. The first candidate, not the dearest: an attempt on a dearer candidate commits the
difference first (a fallback, a spot reclaim's next attempt), and stops the job when it cannot, so the commitment
follows what the job may spend. When the job has ended and its attempts are priced, the commitment is settled: what
it cost stays spent, the rest is released. Batch may retry an attempt whose host failed (the host's fault, not the
job's) up to three times: such a job can cost more than it committed, and what it cost is spent all the same.
"""

from __future__ import annotations

import math

from pydantic import Field

from functions.shared.domain.capacity.fit import resources_on
from functions.shared.domain.capacity.offers import Candidate
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.cost.attempts import instance_share
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.domain.teams.commitment import BudgetState, Commitment, usd


class BudgetRefusal(DomainModel):
    """Body of the 403 `BudgetExceeded`: the window that refused the job (the day's or the month's budget)."""

    error: str = "BudgetExceeded"
    field: str = "timeout_minutes"
    message: str
    team: str
    window: str = Field(description="day or month: the budget that refused the job")
    spent_usd: float
    committed_usd: float
    budget_usd: float
    job_worst_case_usd: float
    fits_with_timeout_minutes: int = Field(description="The longest timeout_minutes that would fit (0: none would)")


def hourly_held(request: JobRequest, candidate: Candidate) -> float | None:
    """What an hour of the job costs on `candidate`: its hourly price x the share of the instance it holds (the
    largest of its GPU, vCPU and memory fractions, as its cost is priced); None when the offering has no price."""
    if candidate.hourly_usd is None:
        return None
    held = resources_on(request, candidate.gpus, candidate.vcpus, candidate.memory_gib)
    share, _ = instance_share(
        {"gpus": request.gpus, "vcpus": held["VCPU"], "memory": held["MEMORY"] / 1024},
        {"gpus": candidate.gpus, "vcpus": candidate.vcpus, "memory": candidate.memory_gib},
    )
    return candidate.hourly_usd * share


def worst_case_usd(request: JobRequest, candidate: Candidate) -> float | None:
    """The most one attempt of the job on `candidate` can cost: an hour held x its timeout."""
    hourly = hourly_held(request, candidate)
    return None if hourly is None else usd(hourly * request.timeout_minutes / 60)


def windows(at: str) -> tuple[str, str]:
    """The day and the month (UTC) an ISO time falls in."""
    return at[:10], at[:7]


def refusal(
    state: BudgetState, commitment: Commitment, adding: float, hourly: float | None, already: float = 0.0
) -> BudgetRefusal | None:
    """Why committing `adding` more (the job's worst case, or what a dearer attempt adds to it) breaks a budget of
    the commitment's team, the day's first; None when it fits both. `hourly`: what an hour of the job costs, which
    says the longest timeout that would fit; `already`: what the job holds already (a raise)."""
    for window, budget, spent, committed in (
        ("day", commitment.budget_usd_per_day, state.spent_day, state.committed_day),
        ("month", commitment.budget_usd_per_month, state.spent_month, state.committed_month),
    ):
        if budget is None or spent + committed + adding <= budget + 1e-9:
            continue
        left = budget - spent - committed + already
        fits = math.floor(left / hourly * 60 + 1e-9) if hourly and left > 0 else 0
        return BudgetRefusal(
            message=f"team {commitment.team}'s budget for the {window} is ${budget:,.2f}: ${spent:,.2f} spent and "
            f"${committed:,.2f} committed leave ${max(0.0, budget - spent - committed):,.2f}, less than the "
            f"${adding:,.2f} this job {'adds to what it holds' if already else 'can cost at worst'}"
            + (f"; a timeout_minutes of {fits} would fit" if fits else "; no timeout would fit"),
            team=commitment.team,
            window=window,
            spent_usd=usd(spent),
            committed_usd=usd(committed),
            budget_usd=usd(budget),
            job_worst_case_usd=usd(adding + already),
            fits_with_timeout_minutes=max(0, fits),
        )
    return None


def bounds(commitment: Commitment, adding: float) -> tuple[float | None, float | None] | None:
    """What the day's and the month's spent-and-committed may be at most before `adding` more is committed (None for
    a window without a budget); None when `adding` alone breaks a budget (nothing to ask the ledger)."""
    day = None if commitment.budget_usd_per_day is None else usd(commitment.budget_usd_per_day - adding)
    month = None if commitment.budget_usd_per_month is None else usd(commitment.budget_usd_per_month - adding)
    if (day is not None and day < 0) or (month is not None and month < 0):
        return None
    return day, month
