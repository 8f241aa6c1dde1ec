"""The audit log: a line per action that changes something or is refused for permission or budget. Pure."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.vocabulary import Action, AuditOutcome, Role

# How long an audit line is kept (the table's TTL): longer than a year, so a year's accounts can be checked.
AUDIT_RETENTION_DAYS = 400
# The most days one GET /audit reads (a query per day).
MAX_AUDIT_DAYS = 31


class AuditEvent(DomainModel):
    """One audited action: who, as which team and role, did (or was refused) what, on what, and why."""

    at: str = Field(description="When (ISO 8601, UTC)")
    principal: str = Field(description="The IAM principal's ARN (an assumed role's session: the role's)")
    team: str | None = None
    role: Role | None = Field(default=None, description="null: the principal is in no team")
    action: Action
    resource: str | None = Field(default=None, description="What it acted on: a job id, an offering, a sweep")
    outcome: AuditOutcome
    detail: dict[str, Any] = Field(
        default_factory=dict,
        description="Why it was refused, the job's worst case, and request_id: API Gateway's request id, which its "
        "access log carries too",
    )


class AuditList(DomainModel):
    """Body of `GET /audit`: the lines of the days asked, oldest first."""

    events: list[AuditEvent]
    truncated: bool = Field(default=False, description="More lines than one answer holds: ask for fewer days")
