"""Batch's own words for a RUNNABLE job, as categories: which of them are a verdict the workflow acts on at once
(another GPU type cures it), and which hold every job waiting behind the one Batch said them of. Pure."""

from __future__ import annotations

from functions.shared.domain.core.vocabulary import DiagnosisCategory
from functions.shared.domain.diagnosis.recommendations import BATCH_REASONS

Category = DiagnosisCategory


# Causes that another GPU type can cure: fall back.
FALLBACK_CATEGORIES = frozenset(
    {
        Category.INSUFFICIENT_CAPACITY,
        Category.NOT_OFFERED,
        Category.ECS_AGENT_NOT_REGISTERED,
        Category.GPU_NOT_REGISTERED,
        Category.AGENT_DISCONNECTED,
        Category.NO_INSTANCES_LAUNCHED,
        Category.COMPUTE_ENVIRONMENT_INVALID,
        Category.JOB_TOO_LARGE,
        Category.POOL_DISABLED,
        Category.POOL_LIMIT,
    }
)


def batch_category(status_reason: str | None) -> DiagnosisCategory | None:
    """The category of Batch's own reason for a RUNNABLE job (its statusReason's prefix), if it gives one we know."""
    reason = status_reason or ""
    return next((category for prefix, category, _ in BATCH_REASONS if reason.startswith(prefix)), None)


def batch_verdict(status_reason: str | None) -> DiagnosisCategory | None:
    """Batch's reason when it is a verdict another GPU type cures (insufficient capacity, a job too large for the
    pool, a type not offered, an INVALID compute environment): the workflow diagnoses it at once instead of
    waiting for stuck_after. Causes time may cure (the pool's maxvCpus, Batch undetermined) and causes Batch does
    not state keep their timing."""
    category = batch_category(status_reason)
    return category if category in FALLBACK_CATEGORIES else None


# Batch's verdicts on a queue's head job that hold every job waiting behind it in GPU Pilot's pool (one instance type,
# one capacity type): not a job too large, which is the head's own.
QUEUE_VERDICTS = frozenset({Category.INSUFFICIENT_CAPACITY, Category.NOT_OFFERED, Category.COMPUTE_ENVIRONMENT_INVALID})


def queue_verdict(status_reason: str | None) -> DiagnosisCategory | None:
    """Batch's reason for the job heading a queue, when it is a verdict on the queue's pool (see QUEUE_VERDICTS)."""
    category = batch_verdict(status_reason)
    return category if category in QUEUE_VERDICTS else None
