"""What each role may do, and the refusal that says why not. Pure.

An admin may do anything, for any team. A member submits, plans, reads, follows the logs of and cancels its team's
jobs, and reads its team's costs. A viewer reads its team's jobs, costs and budget, and nothing else. Fleet-wide
actions (the health report, a sweep), buying capacity and reading the audit log are an admin's.
"""

from __future__ import annotations

from functions.shared.domain.core.errors import Forbidden
from functions.shared.domain.core.vocabulary import Action, Role
from functions.shared.domain.teams.identity import Caller

READS = frozenset({Action.READ, Action.COSTS, Action.TEAMS, Action.RESERVATIONS, Action.WHOAMI})
ALLOWED: dict[Role, frozenset[Action]] = {
    Role.ADMIN: frozenset(Action),
    Role.MEMBER: READS | {Action.SUBMIT, Action.PLAN, Action.LOGS, Action.CANCEL},
    Role.VIEWER: READS,
}
# The actions that change something: each leaves an audit line, done or refused (a refused read leaves one too).
CHANGES = frozenset({Action.SUBMIT, Action.CANCEL, Action.PURCHASE, Action.SWEEP})


def authorize(caller: Caller, action: Action) -> None:
    """Forbidden unless the caller's role allows `action`."""
    if action not in ALLOWED[caller.role]:
        raise Forbidden(
            f"{caller.principal} is a {caller.role.value} of team {caller.team or '(none)'}: a {caller.role.value} "
            f"may not {action.value} (allowed: {', '.join(sorted(a.value for a in ALLOWED[caller.role]))})",
            principal=caller.principal,
            role=caller.role.value,
            action=action.value,
        )


def no_team(principal: str, action: Action) -> Forbidden:
    """The refusal of a principal the deployment's teams do not name: what it lacks, and who can give it."""
    return Forbidden(
        f"{principal} is in no team of this deployment and is not an admin: an admin adds it to a team's members or "
        "viewers (context teams) to let it use GPU Pilot",
        principal=principal,
        action=action.value,
    )
