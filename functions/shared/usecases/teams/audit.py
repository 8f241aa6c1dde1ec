"""The audit log: a line per action that changes something or is refused for permission or budget (`GET /audit`)."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.core.vocabulary import Action, AuditOutcome
from functions.shared.domain.teams.audit import MAX_AUDIT_DAYS, AuditEvent, AuditList
from functions.shared.domain.teams.identity import Caller
from functions.shared.ports import Ports
from functions.shared.usecases.teams.callers import has_teams

# The most lines one answer holds.
MAX_AUDIT_EVENTS = 1000


def record(
    who: Caller | str,
    action: Action,
    outcome: AuditOutcome,
    ports: Ports,
    resource: str | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    """Write the action's audit line (`who`: the caller, or the principal of one in no team). A deployment without
    teams has one user and writes none."""
    if not has_teams(ports):
        return
    caller = who if isinstance(who, Caller) else None
    ports.audit.append(
        AuditEvent(
            at=now_iso(),
            principal=caller.principal if caller else str(who),
            team=caller.team if caller else None,
            role=caller.role if caller else None,
            action=action,
            resource=resource,
            outcome=outcome,
            detail={k: v for k, v in (detail or {}).items() if v is not None},
        )
    )


def audit_events(first_day: str, last_day: str, ports: Ports) -> AuditList:
    """The audit lines of the days from `first_day` to `last_day` (YYYY-MM-DD), at most MAX_AUDIT_DAYS of them."""
    first = max(date.fromisoformat(first_day), date.fromisoformat(last_day) - timedelta(days=MAX_AUDIT_DAYS - 1))
    events, more = ports.audit.events(first.isoformat(), last_day, MAX_AUDIT_EVENTS)
    return AuditList(events=events, truncated=more)
