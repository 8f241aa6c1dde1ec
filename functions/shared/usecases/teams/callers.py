"""Who is calling, and whether its role lets it: every route of the API asks here first."""

from __future__ import annotations

from functions.shared.domain.core.vocabulary import Action
from functions.shared.domain.teams.access import authorize, no_team
from functions.shared.domain.teams.config import teams_config
from functions.shared.domain.teams.identity import Caller, caller_of
from functions.shared.ports import Ports


def caller(user_arn: str | None, action: Action, ports: Ports) -> Caller:
    """The caller API Gateway authenticated as `user_arn`: Forbidden when the deployment's teams give it no role."""
    found = caller_of(user_arn, teams_config(ports.settings.teams_config))
    if found is None:
        raise no_team(user_arn or "an unsigned caller", action)
    return found


def allow(caller: Caller, action: Action) -> None:
    """Forbidden unless the caller's role allows `action`."""
    authorize(caller, action)


def has_teams(ports: Ports) -> bool:
    """Whether the deployment has teams (without, every caller is an admin of one team and nothing is audited)."""
    return teams_config(ports.settings.teams_config) is not None
