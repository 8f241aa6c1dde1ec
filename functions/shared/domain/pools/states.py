"""What the sweep remembers of each pool from one sweep to the next, and what it says of idle and disabled
pools. Pure.

A pool's memory is small: since when it has had no live job (idle), and how many sweeps in a row found its
instances failing to register with ECS. A pool whose instances keep failing to register is broken in a way
another instance will not cure (user data, AMI, instance role, no route to ECS): past
`disable_pool_after_failures` such sweeps its job queue is disabled, so no new job is sent into it.
"""

from __future__ import annotations

from pydantic import Field

from functions.shared.domain.core.clock import seconds_between
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.vocabulary import FindingKind, Severity
from functions.shared.domain.diagnosis.findings import MAX_LISTED, Finding
from functions.shared.domain.diagnosis.runnable import disabled_queue
from functions.shared.domain.fleet.batch import JobQueueState

# Registration failures count as "in a row" while each comes within this long of the one before (the sweep
# runs every 5 minutes; an instance Batch launches after one is terminated needs the grace period to fail).
FAILURE_WINDOW_SECONDS = 3600
REGISTRATION_FAILURES = (FindingKind.ECS_AGENT_NOT_REGISTERED, FindingKind.GPU_NOT_REGISTERED)
IDLE_RECOMMENDATION = (
    "Nothing to do while it has no instance: a pool costs nothing idle (minvCpus 0), but it counts against "
    "Batch's 50 compute environments and 50 job queues per region. Instances alive in an idle pool past the "
    "idle grace period are waste: Batch should have scaled them in (check the compute environment's minvCpus "
    "and desiredvCpus)."
)


USE_FIELDS = frozenset({"last_used_at", "pool_key", "retiring_since", "retire_reason"})


class PoolState(DomainModel):
    """One pool's memory between sweeps; `version` makes each write conditional on the state it was read at."""

    pool: str
    version: int = 0
    idle_since: str | None = Field(default=None, description="When a sweep first saw no live job in its queue")
    registration_failures: int = Field(default=0, description="Sweeps in a row that found instances not registering")
    last_failure_at: str | None = None
    disabled_at: str | None = Field(default=None, description="When the sweep disabled its job queue")
    # Written by whoever uses or retires the pool, not by the sweep's memory (each its own conditional write).
    last_used_at: str | None = Field(default=None, description="When a workflow last claimed it for a job")
    pool_key: str | None = Field(default=None, description="What its versions share")
    retiring_since: str | None = Field(default=None, description="When its retirement started")
    retire_reason: str | None = None

    def same_as(self, other: PoolState | None) -> bool:
        return other is not None and self.memory() == other.memory()

    def memory(self) -> dict[str, object]:
        """What the sweep remembers (and writes, conditional on `version`)."""
        return self.model_dump(exclude={"version", *USE_FIELDS})


def next_state(previous: PoolState | None, pool: str, at: str, *, idle: bool, failed_registration: bool) -> PoolState:
    """The pool's memory after this sweep."""
    state = (previous or PoolState(pool=pool)).model_copy()
    state.idle_since = (state.idle_since or at) if idle else None
    in_a_row = (
        state.last_failure_at is not None and seconds_between(state.last_failure_at, at) <= FAILURE_WINDOW_SECONDS
    )
    if failed_registration:
        state.registration_failures = (state.registration_failures if in_a_row else 0) + 1
        state.last_failure_at = at
    elif not in_a_row:
        state.registration_failures, state.last_failure_at = 0, None
    return state


def should_disable(state: PoolState, queue: JobQueueState | None, after_failures: int) -> bool:
    """Disable the pool's queue: its instances failed to register in `after_failures` sweeps in a row."""
    return (
        bool(after_failures)
        and queue is not None
        and not queue.disabled
        and (state.registration_failures >= after_failures)
    )


def idle_finding(state: PoolState, idle_instances: list[str], at: str, grace_seconds: float) -> Finding:
    """A pool with no live job: INFO while it has no instance (or only for a while), WARNING once instances
    have stayed alive past the idle grace period (waste)."""
    idle_seconds = round(seconds_between(state.idle_since, at)) if state.idle_since else 0
    wasting = bool(idle_instances) and idle_seconds >= grace_seconds
    return Finding(
        kind=FindingKind.IDLE_POOL,
        severity=Severity.WARNING if wasting else Severity.INFO,
        resource=state.pool,
        instances=idle_instances[:MAX_LISTED],
        evidence={
            "idle_since": state.idle_since,
            "idle_seconds": idle_seconds,
            "instances_alive": len(idle_instances),
            "idle_grace_seconds": grace_seconds,
        },
        recommendation=IDLE_RECOMMENDATION,
    )


def disabled_finding(queue: JobQueueState, state: PoolState | None, jobs_in_queue: int) -> Finding:
    """A pool whose queue is DISABLED: each sweep says so until someone enables it again."""
    diagnosis = disabled_queue(queue)
    return Finding(
        kind=FindingKind.POOL_DISABLED,
        severity=Severity.WARNING,
        resource=queue.name,
        evidence=diagnosis.evidence
        | {
            "disabled_by_sweep_at": state.disabled_at if state else None,
            "registration_failures": state.registration_failures if state else 0,
            "live_jobs": jobs_in_queue,
        },
        recommendation=diagnosis.recommendation,
    )
