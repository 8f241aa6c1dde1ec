"""Who is calling: the IAM principal API Gateway authenticated, its team and its role in the deployment's teams.
Pure."""

from __future__ import annotations

import re

from pydantic import Field

from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.vocabulary import Role
from functions.shared.domain.teams.config import DEFAULT_TEAM, TeamsConfig, principal_matches

# An assumed role's session: arn:aws:sts::<account>:assumed-role/<role name>/<session name>. IAM names the role it
# came from arn:aws:iam::<account>:role/<role name> (a role's path is not in the session's ARN: a pattern for a role
# with a path matches it as role/*<name>).
ASSUMED_ROLE = re.compile(r"^arn:(aws[a-z-]*):sts::(\d{12}):assumed-role/([^/]+)/(.+)$")


class Caller(DomainModel):
    """Body of `GET /whoami`: the principal, its team (null: an admin of none) and its role."""

    principal: str = Field(description="The IAM principal's ARN (an assumed role's session: the role's)")
    team: str | None = Field(default=None, description="Its team; null for an admin who is a member of none")
    role: Role
    session: str | None = Field(
        default=None, exclude=True, description="The ARN API Gateway gave, when it was a role's session (audit only)"
    )

    @property
    def admin(self) -> bool:
        return self.role == Role.ADMIN

    def sees(self, team: str | None) -> bool:
        """Whether the caller may read what belongs to `team` (an admin every team; anyone else only its own)."""
        return self.admin or (team is not None and team == self.team)


def principal_of(user_arn: str) -> str:
    """The principal a request's `userArn` names: an assumed role's session is its role."""
    found = ASSUMED_ROLE.match(user_arn)
    if found is None:
        return user_arn
    partition, account, role, _ = found.groups()
    return f"arn:{partition}:iam::{account}:role/{role}"


def caller_of(user_arn: str | None, config: TeamsConfig | None) -> Caller | None:
    """The caller of a request API Gateway authenticated as `user_arn`; None when the deployment's teams give it no
    role (in no team, not an admin). Without teams every caller is an admin of the one team, as before teams.
    A pattern matches the principal or, for a role's session, the session's own ARN (a pattern may name sessions)."""
    principal = principal_of(user_arn) if user_arn else "unknown"
    session = user_arn if user_arn and user_arn != principal else None
    if config is None:
        return Caller(principal=principal, team=DEFAULT_TEAM, role=Role.ADMIN, session=session)
    names = [principal, *([session] if session else [])]

    def matched(patterns: list[str]) -> bool:
        return any(principal_matches(pattern, name) for pattern in patterns for name in names)

    member_of = next((team for team, spec in config.teams.items() if matched(spec.members)), None)
    viewer_of = next((team for team, spec in config.teams.items() if matched(spec.viewers)), None)
    if matched(config.admins):
        return Caller(principal=principal, team=member_of or viewer_of, role=Role.ADMIN, session=session)
    if member_of is not None:
        return Caller(principal=principal, team=member_of, role=Role.MEMBER, session=session)
    if viewer_of is not None:
        return Caller(principal=principal, team=viewer_of, role=Role.VIEWER, session=session)
    return None
