"""Each team's budget as a hard cap: what a new job commits (written with its record, conditionally), the
difference an attempt on a dearer offering commits first, and the settlement once the job has ended and is priced
(what it cost stays spent, the rest of its commitment is released)."""

from __future__ import annotations

from functions.shared.domain.capacity.offers import Candidate
from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.core.errors import BudgetExceeded, BudgetFull, CommitmentChanged, RequestRefused
from functions.shared.domain.cost.attempts import total_cost
from functions.shared.domain.jobs.records import JobRecord, Ownership
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.domain.teams.budget import BudgetRefusal, hourly_held, refusal, windows, worst_case_usd
from functions.shared.domain.teams.caps import gpu_resource_name
from functions.shared.domain.teams.commitment import Commitment, usd
from functions.shared.domain.teams.config import teams_config
from functions.shared.domain.teams.identity import Caller
from functions.shared.ports import Ports

# A conditional write lost to another writer is read again and tried again, this many times in all.
WRITE_TRIES = 5


def ownership(caller: Caller | None, request: JobRequest, first: Candidate, ports: Ports) -> Ownership:
    """Whose the new job is: the caller's, in its team, committing its worst case on `first` (its first candidate)
    when the team has a budget, drawing the team's consumable resource when it has a GPU cap."""
    if caller is None:
        return Ownership()
    config = teams_config(ports.settings.teams_config)
    team = config.team(caller.team) if config else None
    owned = Ownership(owner=caller.principal, team=caller.team)
    if team is None:
        return owned
    gpus = gpu_resource_name(ports.settings.resource_prefix, caller.team or "") if team.max_gpus is not None else None
    budgeted = team.budget_usd_per_day is not None or team.budget_usd_per_month is not None
    # A team without a budget commits too (nothing refuses it): its ledger says what it spent and holds.
    worst = worst_case_usd(request, first)
    if worst is None and budgeted:
        raise RequestRefused(
            "allow_unpriced",
            f"team {caller.team} has a budget, and {first.instance_type} has no known price: GPU Pilot cannot commit "
            "its worst case (choose priced instance_types or gpu_models)",
        )
    day, month = windows(now_iso())
    commitment = Commitment(
        team=caller.team or "",
        day=day,
        month=month,
        usd=worst or 0.0,
        budget_usd_per_day=team.budget_usd_per_day,
        budget_usd_per_month=team.budget_usd_per_month,
    )
    return owned.model_copy(update={"commitment": commitment, "team_gpus": gpus})


def exceeded(owned: Ownership, request: JobRequest, first: Candidate, ports: Ports) -> BudgetExceeded | None:
    """The refusal of a job whose commitment the ledger refused, with the team's figures read now (None: it fits
    now, the budget having moved since: commit again)."""
    commitment = owned.commitment
    assert commitment is not None
    state = ports.budgets.state(commitment.team, commitment.day, commitment.month)
    refused = refusal(state, commitment, commitment.usd, hourly_held(request, first))
    return BudgetExceeded(refused) if refused is not None else None


def create_owned(job_id: str, request: JobRequest, owned: Ownership, first: Candidate, ports: Ports) -> JobRecord:
    """Record the job with what it commits (BudgetExceeded when its team's budget has no room for it)."""
    for _ in range(WRITE_TRIES):
        try:
            return ports.jobs.create_job(job_id, request, owned)
        except BudgetFull:
            refused = exceeded(owned, request, first, ports)
            if refused is not None:
                raise refused from None
    raise BudgetExceeded(_unsettled(owned))


def _unsettled(owned: Ownership) -> BudgetRefusal:
    commitment = owned.commitment
    assert commitment is not None
    return BudgetRefusal(
        message=f"team {commitment.team}'s budget kept changing while this job was committed: try again",
        team=commitment.team,
        window="day",
        spent_usd=0,
        committed_usd=0,
        budget_usd=commitment.budget_usd_per_day or commitment.budget_usd_per_month or 0,
        job_worst_case_usd=commitment.usd,
        fits_with_timeout_minutes=0,
    )


def commit_attempt(record: JobRecord, candidate: Candidate, ports: Ports) -> BudgetRefusal | None:
    """Before an attempt on `candidate` begins: what the job may spend now (its earlier attempts' cost and this
    attempt's worst case), committed where it exceeds what the job holds. The refusal, when a budget has no room."""
    for _ in range(WRITE_TRIES):
        commitment = record.commitment
        if commitment is None or commitment.settled_usd is not None:
            return None
        worst = worst_case_usd(record.request, candidate)
        if worst is None:
            return None  # an unpriced fallback: what it cost is spent when it is priced
        spent = total_cost([a.cost for _, a in record.ordered_attempts() if a.cost is not None])
        needed = usd((spent.usd if spent else 0.0) + worst)
        adding = usd(needed - commitment.usd)
        if adding <= 0:
            return None
        try:
            if ports.budgets.raise_commitment(record.job_id, commitment, adding):
                return None
        except CommitmentChanged:
            record = ports.jobs.get_job(record.job_id)
            continue
        state = ports.budgets.state(commitment.team, commitment.day, commitment.month)
        refused = refusal(state, commitment, adding, hourly_held(record.request, candidate), already=commitment.usd)
        if refused is not None:
            return refused
        record = ports.jobs.get_job(record.job_id)
    return None


def settle(job_id: str, ports: Ports, record: JobRecord | None = None) -> None:
    """Once the job has ended: its commitment released and what it cost spent, or, after an attempt priced later,
    the difference spent. Once, whoever comes (the outcome, a cancel, a late price, the sweep)."""
    for _ in range(WRITE_TRIES):
        record = record or ports.jobs.get_job(job_id)
        commitment = record.commitment
        if commitment is None or not record.status.finished:
            return
        cost = total_cost([a.cost for _, a in record.ordered_attempts() if a.cost is not None])
        cost_usd = usd(cost.usd if cost else 0.0)
        if commitment.settled_usd is not None and commitment.settled_usd == cost_usd:
            return
        if ports.budgets.settle(job_id, commitment, cost_usd):
            return
        record = None
