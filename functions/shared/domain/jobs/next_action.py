"""What the workflow does next about a job waiting to start, and when: fall back, give up, or diagnose at the end
of its start wait (stuck_after_minutes), unless it starts first. Pure."""

from __future__ import annotations

import re
from datetime import timedelta

from pydantic import Field

from functions.shared.domain.capacity.unavailable import clock_minute
from functions.shared.domain.core.clock import iso, parse_iso, seconds_between
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.vocabulary import DiagnosisCategory, NextStep, WaitPhase
from functions.shared.domain.diagnosis.runnable import Diagnosis
from functions.shared.domain.diagnosis.verdicts import FALLBACK_CATEGORIES, batch_category
from functions.shared.domain.jobs.current import current_attempt, current_number
from functions.shared.domain.jobs.records import JobRecord, NextCandidate

# The undated promise some recommendations end with ("GPU Pilot falls back [to the next GPU type] meanwhile.").
MEANWHILE = re.compile(r"\s*GPU Pilot falls back[^.]*meanwhile\.")


class NextAction(DomainModel):
    """What the workflow does, and when, if a waiting job has not started by then."""

    action: NextStep = Field(description="fall_back, give_up, or diagnose (the cause is not known to be curable yet)")
    at: str = Field(description="When (ISO): the end of the start wait (stuck_after_minutes)")
    candidate: NextCandidate | None = Field(default=None, description="The offering it falls back to, if any")

    def words(self, region: str | None = None) -> str:
        """`falls back to g6.xlarge (on-demand) at 12:41 UTC unless it starts`; `... (on-demand) in us-west-2 ...` when
        the candidate is in another region than `region` (the waiting attempt's)."""
        when = f"at {clock_minute(self.at)} unless it starts"
        following = f"{self.candidate.instance_type} ({self.candidate.capacity.value})" if self.candidate else None
        if following and self.candidate and self.candidate.region and region and self.candidate.region != region:
            following += f" in {self.candidate.region}"
        if self.action == NextStep.FALL_BACK and following:
            return f"falls back to {following} {when}"
        if self.action == NextStep.GIVE_UP:
            return f"gives up {when}"
        return f"diagnoses {when}" + (f"; it may then fall back to {following}" if following else "")


def current_cause(record: JobRecord) -> DiagnosisCategory | None:
    """The category of why an unfinished job waits now: the diagnosis of the attempt it is on, else Batch's words."""
    attempt = None if record.status.finished else current_attempt(record)
    if attempt is None:
        return None
    return attempt.diagnosis.category if attempt.diagnosis is not None else batch_category(attempt.status_reason)


def next_action(record: JobRecord, cause: DiagnosisCategory | None = None) -> NextAction | None:
    """What the workflow does at the end of the job's start wait unless it starts: fall back when the cause
    (`cause`, else the current one) is one another GPU type cures, give up when no candidate is left or the
    request's give_up_after_minutes has passed by then, else diagnose."""
    wait = record.waits.get(WaitPhase.START)
    if record.status.finished or wait is None or wait.since is None or wait.timeout_seconds is None:
        return None
    attempt = record.attempts.get(wait.attempt)
    if attempt is None or (attempt.batch_status is not None and attempt.batch_status.started):
        return None
    if wait.attempt != current_number(record):
        return None  # a wait the job has left behind: it is on a later attempt now
    at = iso(parse_iso(wait.since) + timedelta(seconds=wait.timeout_seconds))
    give_up_after = record.request.give_up_after_minutes
    past_limit = give_up_after is not None and seconds_between(record.created_at, at) >= give_up_after * 60
    cause = cause or current_cause(record)
    if past_limit or (cause in FALLBACK_CATEGORIES and wait.next_candidate is None):
        return NextAction(action=NextStep.GIVE_UP, at=at)
    step = NextStep.FALL_BACK if cause in FALLBACK_CATEGORIES else NextStep.DIAGNOSE
    return NextAction(action=step, at=at, candidate=wait.next_candidate)


def with_next_action(diagnosis: Diagnosis, action: NextAction | None, region: str | None = None) -> Diagnosis:
    """The diagnosis, its recommendation saying when the workflow acts rather than promising a fallback 'meanwhile'
    that may be minutes away (and where, when it leaves `region`, the waiting attempt's)."""
    if action is None:
        return diagnosis
    recommendation = MEANWHILE.sub("", diagnosis.recommendation).rstrip()
    return diagnosis.model_copy(update={"recommendation": f"{recommendation} GPU Pilot {action.words(region)}."})
