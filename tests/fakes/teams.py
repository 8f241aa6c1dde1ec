"""In-memory fakes of the teams' ports: a budget ledger as conditional as the table's (sharing the job store's lock,
as a transaction spans a job's record and its team's item), an audit log, and Batch's consumable resources."""

from __future__ import annotations

from dataclasses import dataclass, field

from functions.shared.domain.core.errors import BudgetFull, CommitmentChanged
from functions.shared.domain.teams.audit import AuditEvent
from functions.shared.domain.teams.budget import bounds
from functions.shared.domain.teams.commitment import BudgetState, Commitment, usd
from tests.fakes.job_store import FakeJobStore


@dataclass
class Ledger:
    """One team's month: what its jobs spent and hold committed, by day and in all."""

    spent: dict[str, float] = field(default_factory=dict)
    committed: dict[str, float] = field(default_factory=dict)

    def used(self, key: str) -> float:
        return self.spent.get(key, 0.0) + self.committed.get(key, 0.0)

    def add(self, key: str, spent: float = 0.0, committed: float = 0.0) -> None:
        self.spent[key] = usd(self.spent.get(key, 0.0) + spent)
        self.committed[key] = usd(self.committed.get(key, 0.0) + committed)


class FakeBudgets:
    """ports.teams.Budgets over the job store's records; `writes` counts the conditional writes made."""

    def __init__(self, jobs: FakeJobStore) -> None:
        self.jobs = jobs
        self.ledgers: dict[tuple[str, str], Ledger] = {}
        self.writes = 0
        jobs.budgets = self

    def ledger(self, team: str, month: str) -> Ledger:
        return self.ledgers.setdefault((team, month), Ledger())

    def commit(self, commitment: Commitment, adding: float) -> None:
        """Commit `adding` under the budgets' conditions (the caller holds the store's lock): BudgetFull if not."""
        self.writes += 1
        limits = bounds(commitment, adding)
        ledger = self.ledger(commitment.team, commitment.month)
        if limits is None:
            raise BudgetFull(commitment.team)
        day_bound, month_bound = limits
        if day_bound is not None and ledger.used(commitment.day) > day_bound + 1e-9:
            raise BudgetFull(commitment.team)
        if month_bound is not None and ledger.used("month") > month_bound + 1e-9:
            raise BudgetFull(commitment.team)
        ledger.add(commitment.day, committed=adding)
        ledger.add("month", committed=adding)

    def state(self, team: str, day: str, month: str) -> BudgetState:
        ledger = self.ledger(team, month)
        return BudgetState(
            spent_day=ledger.spent.get(day, 0.0),
            committed_day=ledger.committed.get(day, 0.0),
            spent_month=ledger.spent.get("month", 0.0),
            committed_month=ledger.committed.get("month", 0.0),
        )

    def raise_commitment(self, job_id: str, commitment: Commitment, adding: float) -> bool:
        with self.jobs.lock:
            record = self.jobs.records[job_id]
            held = record.commitment
            if held is None or held.usd != commitment.usd or held.settled_usd is not None:
                raise CommitmentChanged(job_id)
            try:
                self.commit(commitment, adding)
            except BudgetFull:
                return False
            record.commitment = held.model_copy(update={"usd": usd(held.usd + adding)})
            return True

    def settle(self, job_id: str, commitment: Commitment, cost_usd: float) -> bool:
        with self.jobs.lock:
            self.writes += 1
            record = self.jobs.records[job_id]
            held = record.commitment
            if held is None or held.settled_usd != commitment.settled_usd:
                return False
            ledger = self.ledger(commitment.team, commitment.month)
            first = held.settled_usd is None
            spent = cost_usd - (held.settled_usd or 0.0)
            for key in (commitment.day, "month"):
                ledger.add(key, spent=spent, committed=-held.usd if first else 0.0)
            record.commitment = held.model_copy(update={"settled_usd": cost_usd})
            return True


class FakeAuditLog:
    def __init__(self) -> None:
        self.lines: list[AuditEvent] = []

    def append(self, event: AuditEvent) -> None:
        self.lines.append(event)

    def events(self, first_day: str, last_day: str, limit: int) -> tuple[list[AuditEvent], bool]:
        found = [e for e in self.lines if first_day <= e.at[:10] <= last_day]
        return found[:limit], len(found) > limit


class FakeGpuCaps:
    """Batch's consumable resources: total and held units by name, and the RUNNABLE jobs waiting for each."""

    def __init__(self, totals: dict[str, int] | None = None) -> None:
        self.totals = dict(totals or {})
        self.held: dict[str, int] = {}
        self.waiting_jobs: dict[str, list[tuple[str, int]]] = {}
        self.calls = 0

    def usage(self, resource: str) -> tuple[int, int] | None:
        self.calls += 1
        if resource not in self.totals:
            return None
        return self.held.get(resource, 0), self.totals[resource]

    def waiting(self, resource: str) -> list[tuple[str, int]]:
        self.calls += 1
        return list(self.waiting_jobs.get(resource, []))
