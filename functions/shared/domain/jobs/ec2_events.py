"""EC2's own word on a spot host, through EventBridge: its two-minute interruption warning and a rebalance
recommendation, as the fields and the timeline note of the attempts running on it. Pure.

The events (Amazon EC2 User Guide, "Spot Instance interruption notices", EC2 Spot Instance Interruption Warning
event; "EC2 instance rebalance recommendations", Monitor rebalance recommendation signals) come from `aws.ec2`,
name the instance in `detail.instance-id` (the warning adds `detail.instance-action`: terminate, stop or hibernate)
and are emitted on a best-effort basis: the host agent reads the same notice from the instance metadata, and whichever
is recorded first stands.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field, ValidationError

from functions.shared.domain.core.clock import normalize_iso
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.jobs.records import ActiveJob

EC2_SOURCE = "aws.ec2"


class Ec2Signal(StrEnum):
    """The detail types of EC2's events about a spot instance GPU Pilot records."""

    INTERRUPTION_WARNING = "EC2 Spot Instance Interruption Warning"
    REBALANCE_RECOMMENDATION = "EC2 Instance Rebalance Recommendation"


# The attempt's field each signal sets, once (the first writer's time stands), and the words of its timeline note.
FIELDS = {
    Ec2Signal.INTERRUPTION_WARNING: "interruption_notice_at",
    Ec2Signal.REBALANCE_RECOMMENDATION: "rebalance_recommended_at",
}
WORDS = {
    Ec2Signal.INTERRUPTION_WARNING: "spot interruption warning",
    Ec2Signal.REBALANCE_RECOMMENDATION: "rebalance recommendation",
}


class Ec2InstanceEvent(DomainModel):
    signal: Ec2Signal
    instance_id: str = Field(min_length=1)
    at: str = Field(description="The event's time: when EC2 gave the signal")
    action: str | None = Field(default=None, description="The warning's instance-action: terminate, stop, hibernate")

    @classmethod
    def from_eventbridge(cls, event: dict[str, Any]) -> Ec2InstanceEvent | None:
        """The signal, or None for any other event (or a malformed one: noted, never retried)."""
        if event.get("source") != EC2_SOURCE or event.get("detail-type") not in set(Ec2Signal):
            return None
        detail = event.get("detail") or {}
        try:
            return cls(
                signal=Ec2Signal(event["detail-type"]),
                instance_id=detail.get("instance-id") or "",
                at=normalize_iso(str(event.get("time") or "")),
                action=detail.get("instance-action"),
            )
        except ValidationError:
            return None

    @property
    def field(self) -> str:
        return FIELDS[self.signal]

    @property
    def note(self) -> str:
        """The job's timeline note: `host i-... spot interruption warning: EC2 gave it at ... (terminate)`."""
        action = f" ({self.action})" if self.action else ""
        return f"host {self.instance_id} {WORDS[self.signal]}: EC2 gave it at {self.at}{action}"

    @property
    def note_key(self) -> str:
        """What makes the note once per host and signal, however often EventBridge delivers the event."""
        return f"{self.instance_id}#{self.signal.name.lower()}"


def attempts_on(records: list[ActiveJob], instance_id: str) -> list[tuple[str, int]]:
    """(job_id, attempt) of each unfinished job whose latest attempt runs on the instance (its host, as the host agent
    reported it) and has not ended."""
    found = []
    for record in records:
        latest = record.latest_attempt()
        if latest is not None and latest[1].host == instance_id and latest[1].live:
            found.append((record.job_id, latest[0]))
    return sorted(found)
