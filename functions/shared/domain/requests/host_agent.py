"""What a request asks of the host agent (DESIGN.md, Host agent): `checkpoint` (true, or how often to upload, which
signal the program gets on a spot interruption notice and how long it has to write) and `idle_policy` (what to do
with a job whose GPUs idle that long)."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import ConfigDict, Field, StrictInt, field_validator

from functions.shared.domain.core.model import DomainModel

# EC2 gives two minutes between the spot interruption notice and the reclaim ("Spot Instance interruption notices",
# Amazon EC2 User Guide): the program's grace leaves the agent time to upload what it wrote.
NOTICE_SECONDS = 120
MAX_GRACE_SECONDS = 100
CHECKPOINT = (
    "Keep the job's checkpoint directory (GPUPILOT_CHECKPOINT_DIR) in S3 and restore it on its next attempt after a "
    "spot reclaim: true, or {every_minutes, signal, grace_seconds}"
)
IDLE_POLICY = "Warn about or cancel a job whose GPUs stay under 5% utilisation this long"


class CheckpointSignal(StrEnum):
    """What the agent sends the job's program to make it write its checkpoint."""

    SIGTERM = "SIGTERM"
    SIGINT = "SIGINT"
    SIGUSR1 = "SIGUSR1"
    SIGUSR2 = "SIGUSR2"


class CheckpointPolicy(DomainModel):
    model_config = ConfigDict(extra="forbid")

    every_minutes: StrictInt | None = Field(
        default=None, ge=1, le=1440, description="Also upload what the program wrote this often (default: only on "
        "a spot interruption notice)"
    )  # fmt: skip
    signal: CheckpointSignal = Field(default=CheckpointSignal.SIGTERM, description="Sent on the notice")
    grace_seconds: StrictInt = Field(
        default=90, ge=1, le=MAX_GRACE_SECONDS, description="How long the program has to write after the signal "
        f"(at most {MAX_GRACE_SECONDS}: the notice comes {NOTICE_SECONDS} s before the reclaim, and the upload follows)"
    )  # fmt: skip

    @field_validator("every_minutes", "grace_seconds", mode="before")
    @classmethod
    def _whole_numbers(cls, value: Any) -> Any:
        return integral(value)


def integral(value: Any) -> Any:
    """JSON Schema's integer: 19.0 is one (a number without a fractional part); "19" and true are not."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


class IdleAction(StrEnum):
    WARN = "warn"
    CANCEL = "cancel"


class IdlePolicy(DomainModel):
    model_config = ConfigDict(extra="forbid")

    after_minutes: StrictInt = Field(ge=1, le=10_080, description="GPUs under 5% utilisation this long")

    @field_validator("after_minutes", mode="before")
    @classmethod
    def _whole_minutes(cls, value: Any) -> Any:
        return integral(value)

    action: IdleAction = Field(description="warn: a job warning and a GPU_IDLE finding; cancel: the job is cancelled")


def checkpoint_from_boolean(value: Any) -> Any:
    """`checkpoint: true` is the default policy, `false` none; a field of one type, so that a refusal names the
    field that is wrong (checkpoint.grace_seconds), not a branch of a union."""
    if value is True:
        return {}
    return None if value is False else value


def or_bool(schema: dict[str, Any]) -> None:
    """The field's JSON schema accepts true and false too (as checkpoint_from_boolean does)."""
    schema["anyOf"] = [{"type": "boolean"}, *schema.get("anyOf", [])]


# JobRequest.checkpoint: a policy, or true for the default one (the schema says so).
CHECKPOINT_FIELD: Any = Field(default=None, description=CHECKPOINT, json_schema_extra=or_bool)
