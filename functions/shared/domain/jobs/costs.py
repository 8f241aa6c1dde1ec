"""What a job cost: its attempts' costs summed, and what its reclaims took and resuming saved (cost/reclaims.py),
over its attempts. Pure."""

from __future__ import annotations

import contextlib

from functions.shared.domain.core.clock import seconds_between
from functions.shared.domain.core.money import usd_sum
from functions.shared.domain.cost.attempts import billed, total_cost
from functions.shared.domain.cost.reclaims import JobCost, ReclaimCost, priced_like
from functions.shared.domain.jobs.records import AttemptRecord, JobRecord


def job_cost(record: JobRecord) -> JobCost | None:
    """What the job cost: the exact sum of its attempts' costs (RecordCost's, for records priced before attempts
    were), with what its reclaims cost."""
    attempts = [billed(a.cost, a.reservation) for _, a in record.ordered_attempts() if a.cost is not None]
    total = total_cost(attempts) or record.cost
    if total is None:
        return None
    return JobCost(**total.model_dump(), reclaims=reclaim_cost(dict(record.ordered_attempts())))


def reclaim_cost(attempts: dict[int, AttemptRecord]) -> ReclaimCost | None:
    """The attempts EC2 gave an interruption notice: the work each lost since its checkpoint, and the work before it
    that an attempt resumed from that checkpoint did not redo, priced as the interrupted attempt was (an attempt not
    priced yet counts its seconds, not its dollars). None when no attempt was interrupted."""
    interrupted = {n: a for n, a in attempts.items() if a.interruption_notice_at is not None}
    if not interrupted:
        return None
    resumed = {(a.resumed_from or {}).get("attempt"): a.resumed_from or {} for a in attempts.values()}
    lost, lost_usd, saved, saved_usd = [], [], [], []
    for number, attempt in sorted(interrupted.items()):
        seconds = attempt.progress_lost_seconds or 0.0
        lost.append(seconds)
        if attempt.cost is not None:
            lost_usd.append(priced_like(attempt.cost, seconds))
        if number in resumed:
            kept = kept_seconds(attempt, resumed[number].get("saved_at"))
            saved.append(kept)
            if attempt.cost is not None:
                saved_usd.append(priced_like(attempt.cost, kept))
    return ReclaimCost(
        count=len(interrupted),
        lost_seconds=round(sum(lost), 1),
        lost_usd=usd_sum(lost_usd),
        saved_seconds=round(sum(saved), 1),
        saved_by_resume_usd=usd_sum(saved_usd),
    )


def kept_seconds(attempt: AttemptRecord, saved_at: object) -> float:
    """The work an interrupted attempt had done up to the checkpoint resumed from: from its start to when the
    program saved it (else its runtime less the progress it lost), never more than its runtime."""
    runtime = attempt.cost.runtime_seconds if attempt.cost is not None else attempt.runtime_seconds
    kept = max(0.0, (runtime or 0.0) - (attempt.progress_lost_seconds or 0.0))
    if isinstance(saved_at, str) and attempt.started_at:
        # A checkpoint time that is not one leaves the runtime less the progress lost to say it.
        with contextlib.suppress(ValueError):
            kept = seconds_between(attempt.started_at, saved_at)
    return round(min(kept, runtime) if runtime is not None else kept, 1)
