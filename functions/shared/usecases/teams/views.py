"""`GET /teams`: each team's budget, what it spent today and this month, what it holds committed, and its GPUs in use
against its cap (an admin: every team; anyone else: its own)."""

from __future__ import annotations

from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.teams.budget import windows
from functions.shared.domain.teams.caps import gpu_resource_name
from functions.shared.domain.teams.commitment import BudgetState
from functions.shared.domain.teams.config import teams_config
from functions.shared.domain.teams.identity import Caller
from functions.shared.domain.teams.views import TeamList, TeamView, team_view
from functions.shared.ports import Ports


def list_teams(caller: Caller, ports: Ports) -> TeamList:
    """The teams the caller may see, each read now: its ledger (one read), its GPUs in use (one Batch call, when it
    has a cap)."""
    config = teams_config(ports.settings.teams_config)
    if config is None:
        names = [caller.team] if caller.team else []
    else:
        names = [name for name in config.teams if caller.sees(name)]
    day, month = windows(now_iso())
    return TeamList(teams=[_view(name, day, month, ports) for name in names])


def _view(name: str, day: str, month: str, ports: Ports) -> TeamView:
    config = teams_config(ports.settings.teams_config)
    team = config.team(name) if config else None
    state = ports.budgets.state(name, day, month) if team is not None else BudgetState()
    in_use = None
    if team is not None and team.max_gpus is not None:
        usage = ports.caps.usage(gpu_resource_name(ports.settings.resource_prefix, name))
        in_use = usage[0] if usage else None
    return team_view(name, team, state, in_use)
