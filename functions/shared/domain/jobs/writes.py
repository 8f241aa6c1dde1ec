"""Writes to many jobs at once (JobStore.write_many), as data: each as conditional as its single form, so the
sweep's replays and the events batch them and apply each on its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from functions.shared.domain.core.vocabulary import JobStatus, WaitPhase


@dataclass(frozen=True)
class AttemptUpdate:
    """JobStore.update_attempt, as one of many writes."""

    job_id: str
    number: int
    fields: dict[str, Any]
    if_missing: dict[str, Any] | None = None


@dataclass(frozen=True)
class JobFinish:
    """JobStore.finish, as one of many writes."""

    job_id: str
    status: JobStatus
    fields: dict[str, Any] | None = None
    reason: str | None = None


@dataclass(frozen=True)
class WaitClear:
    """JobStore.clear_wait, as one of many writes."""

    job_id: str
    phase: WaitPhase
    token: str


JobWrite = AttemptUpdate | JobFinish | WaitClear
