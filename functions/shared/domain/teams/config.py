"""The deployment's teams (context `teams`, the local cloud's world `teams`): ARN patterns of its admins, and per team
its members, viewers, budgets, GPU cap and fair-share weight. Pure."""

from __future__ import annotations

import fnmatch
import json
import re
from functools import cache

from pydantic import ConfigDict, Field, StrictFloat, StrictInt, field_validator

from functions.shared.domain.core.model import DomainModel

# A team's name is part of its Batch consumable resource's name and of its budget's key: letters, digits, '-'.
TEAM_NAME = r"^[a-z0-9][a-z0-9-]{0,31}$"
# Who every caller is when the deployment has no `teams`: an admin of this one team (GPU Pilot before teams).
DEFAULT_TEAM = "default"
# An IAM principal's ARN, or a pattern of them with `*` (`?` too, as IAM's ARN patterns allow).
PRINCIPAL_PATTERN = r"^arn:aws[a-z-]*:(iam|sts)::[0-9*?]{1,12}:[A-Za-z0-9+=,.@_/*?-]{1,1024}$"
Pattern = str


class TeamConfig(DomainModel):
    """One team: who belongs to it, and what it may spend and hold at once."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    members: list[Pattern] = Field(default_factory=list, description="Principals who submit and manage its jobs")
    viewers: list[Pattern] = Field(default_factory=list, description="Principals who read its jobs and costs")
    budget_usd_per_day: StrictFloat | StrictInt | None = Field(default=None, gt=0, le=10_000_000)
    budget_usd_per_month: StrictFloat | StrictInt | None = Field(default=None, gt=0, le=100_000_000)
    max_gpus: StrictInt | None = Field(default=None, ge=0, le=100_000, description="GPUs its running jobs hold at once")
    weight: StrictFloat | StrictInt = Field(default=1, gt=0, le=1000, description="Its share of a pool's GPUs")

    @field_validator("members", "viewers")
    @classmethod
    def _patterns(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            if not re.match(PRINCIPAL_PATTERN, pattern):
                raise ValueError(f"{pattern!r} is not an IAM principal's ARN (or a pattern of them, with *)")
        return patterns


class TeamsConfig(DomainModel):
    """Context `teams`: `{"admins": [pattern, ...], "teams": {name: TeamConfig}}`."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    admins: list[Pattern] = Field(default_factory=list, description="Principals who may do anything, for any team")
    teams: dict[str, TeamConfig] = Field(default_factory=dict)

    @field_validator("admins")
    @classmethod
    def _admins(cls, patterns: list[str]) -> list[str]:
        return TeamConfig._patterns(patterns)

    @field_validator("teams")
    @classmethod
    def _names(cls, teams: dict[str, TeamConfig]) -> dict[str, TeamConfig]:
        for name in teams:
            if not re.match(TEAM_NAME, name):
                raise ValueError(f"team {name!r}: a team's name is 1-32 of a-z, 0-9 and '-', starting with a letter "
                                 "or digit")  # fmt: skip
        return teams

    def team(self, name: str | None) -> TeamConfig | None:
        return self.teams.get(name) if name else None


def principal_matches(pattern: str, principal: str) -> bool:
    """IAM's ARN matching: `*` any run of characters, `?` one; case matters (an ARN's case is significant)."""
    return fnmatch.fnmatchcase(principal, pattern)


@cache
def teams_config(raw: str) -> TeamsConfig | None:
    """The deployment's teams from their JSON (Settings.teams_config); None: the deployment has none."""
    if not raw.strip():
        return None
    return TeamsConfig.model_validate(json.loads(raw))
