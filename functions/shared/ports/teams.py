"""The ports of teams: each team's budget ledger (what its jobs spent and hold committed), the audit log, and the
GPUs AWS Batch counts against each team's cap."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # annotations only: a handler imports the domain modules it uses, not all of them
    from functions.shared.domain.teams.audit import AuditEvent
    from functions.shared.domain.teams.commitment import BudgetState, Commitment


class Budgets(Protocol):
    """Each team's budget ledger: an item per team and month. Every write is conditional; a job's own commitment
    is written on its record in the same transaction (JobStore.create_job commits a new job's)."""

    def state(self, team: str, day: str, month: str) -> BudgetState:
        """What the team spent and holds committed in that day and month."""
        ...

    def raise_commitment(self, job_id: str, commitment: Commitment, adding: float) -> bool:
        """Commit `adding` more for the job, if its team's budgets leave room and the job still holds `commitment`
        (one transaction); False when a budget refuses it. RaceLost when the job's commitment changed meanwhile."""
        ...

    def settle(self, job_id: str, commitment: Commitment, cost_usd: float) -> bool:
        """Settle the job's commitment at what it cost (first: release the commitment and spend the cost; again, after
        a later priced attempt: spend the difference), if the job's record still says `commitment.settled_usd`
        (one transaction); False when another writer settled it first."""
        ...


class AuditLog(Protocol):
    """The audit log: a line per audited action, kept AUDIT_RETENTION_DAYS."""

    def append(self, event: AuditEvent) -> None: ...

    def events(self, first_day: str, last_day: str, limit: int) -> tuple[list[AuditEvent], bool]:
        """The lines of those days (UTC, inclusive), oldest first, at most `limit`; and whether there were more."""
        ...


class GpuCaps(Protocol):
    """The teams' GPU caps as AWS Batch holds them: a consumable resource per capped team (in each region)."""

    def usage(self, resource: str) -> tuple[int, int] | None:
        """(units held now, total units) of the resource, as Batch counts them (None: Batch does not know it)."""
        ...

    def waiting(self, resource: str) -> list[tuple[str, int]]:
        """The jobs Batch holds RUNNABLE that need the resource: (Batch job id, created at epoch milliseconds)."""
        ...
