"""Retiring pools: why a pool goes, and Batch's order of taking one down, one step at a time. Pure.

A pool goes when a newer version of it has taken its jobs (its spec changed), when it has been idle for
`pool_idle_hours`, when its compute environment is INVALID (the next job that needs it gets a new one), or
to make room under Batch's 50 compute environments and 50 job queues per region. Batch's order: disable the
queue (no new job), let the jobs in it finish, delete the queue, disable the compute environment, delete it.
Each step is asynchronous in Batch (UPDATING, DELETING): whoever advances a retirement (the sweep, or a
workflow waiting for the pool's name or for room) takes the steps Batch allows now and comes back later.

Retiring races with workflows choosing the pool: a workflow claims a pool (its last use) before using it, a
retirement starts only if nobody claimed the pool since it was read, and a claim fails once a retirement
has started (both conditional writes on the pool's item). A pool claimed in the last `claim_grace` seconds is
never retired (but for an INVALID one): its workflow may still be between its claim and its SubmitJob.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from functions.shared.domain.core.clock import seconds_between
from functions.shared.domain.core.vocabulary import DiagnosisCategory, FindingKind, Severity
from functions.shared.domain.diagnosis.findings import Finding
from functions.shared.domain.diagnosis.runnable import Diagnosis
from functions.shared.domain.fleet.batch import ComputeEnvironmentState, JobQueueState
from functions.shared.domain.pools.specs import KEY_TAG, MAX_COMPUTE_ENVIRONMENTS, MAX_JOB_QUEUES
from functions.shared.domain.pools.states import PoolState

BUSY = frozenset({"CREATING", "UPDATING", "DELETING"})
POOL_LIMIT_RECOMMENDATION = (
    "Batch allows {environments} compute environments and {queues} job queues per region, and this cannot be "
    "raised. Delete the ones nothing uses (aws batch update-job-queue --state DISABLED, delete-job-queue, "
    "update-compute-environment --state DISABLED, delete-compute-environment), or lower GPUPILOT_POOL_IDLE_HOURS "
    "so that GPU Pilot retires its idle pools sooner. GPU Pilot falls back to a GPU type whose pool exists "
    "meanwhile."
)


class RetireReason(StrEnum):
    OUTDATED = "outdated"  # a newer version of the same pool (changed spec) took its jobs
    IDLE = "idle"  # no job for pool_idle_hours
    INVALID = "invalid"  # its compute environment is INVALID: the next job that needs it gets a new one
    MAKE_ROOM = "make_room"  # the least recently used idle pool, so that a new one fits under Batch's limits


class RetireStep(StrEnum):
    DISABLE_QUEUE = "disable_queue"
    DRAIN_QUEUE = "drain_queue"  # jobs are still in the (disabled) queue: they finish first
    DELETE_QUEUE = "delete_queue"
    DISABLE_ENVIRONMENT = "disable_environment"
    DELETE_ENVIRONMENT = "delete_environment"
    WAIT = "wait"  # Batch is still applying the last step (CREATING, UPDATING, DELETING)
    DONE = "done"  # both are gone


def retirement_step(queue: JobQueueState | None, environment: ComputeEnvironmentState | None) -> RetireStep:
    """The next step of taking the pool down, from what Batch shows of it now (DRAIN_QUEUE is the caller's:
    DELETE_QUEUE when its queue still has jobs)."""
    if queue is not None and queue.status != "DELETED":
        if queue.status in BUSY:
            return RetireStep.WAIT
        return RetireStep.DELETE_QUEUE if queue.disabled else RetireStep.DISABLE_QUEUE
    if environment is None or environment.status == "DELETED":
        return RetireStep.DONE
    if environment.status in BUSY:
        return RetireStep.WAIT
    return RetireStep.DELETE_ENVIRONMENT if environment.state == "DISABLED" else RetireStep.DISABLE_ENVIRONMENT


def last_activity(state: PoolState | None) -> str | None:
    """When the pool was last seen busy or claimed: the later of its idle start and its last claim."""
    if state is None:
        return None
    return max((t for t in (state.idle_since, state.last_used_at) if t), default=None)


def recently_used(state: PoolState | None, at: str, claim_grace: float) -> bool:
    used = state.last_used_at if state else None
    return used is not None and seconds_between(used, at) < claim_grace


def retire_reason(
    environment: ComputeEnvironmentState,
    state: PoolState | None,
    newer_exists: bool,
    at: str,
    idle_hours: float,
    claim_grace: float,
) -> RetireReason | None:
    """Why the sweep retires this pool now, or None. `newer_exists`: another version of the same pool was
    claimed after this one."""
    if environment.status == "INVALID":
        return RetireReason.INVALID
    if state is not None and state.retiring_since:
        return RetireReason(state.retire_reason or RetireReason.IDLE)
    if recently_used(state, at, claim_grace):
        return None
    if newer_exists:
        return RetireReason.OUTDATED
    if state is not None and state.idle_since:
        idle_from = last_activity(state) or state.idle_since
        if seconds_between(idle_from, at) >= idle_hours * 3600:
            return RetireReason.IDLE
    return None


def pool_key(environment: ComputeEnvironmentState) -> str:
    """What versions of the pool share (a pool from before versions is keyed by its own name)."""
    return environment.tags.get(KEY_TAG) or environment.name


def outdated(environments: list[ComputeEnvironmentState], states: dict[str, PoolState]) -> set[str]:
    """Pools with a newer version: another pool of the same key claimed after them."""
    used = {e.name: (states[e.name].last_used_at if e.name in states else None) or "" for e in environments}
    latest: dict[str, str] = {}
    for environment in environments:
        key = pool_key(environment)
        latest[key] = max(latest.get(key, ""), used[environment.name])
    return {e.name for e in environments if used[e.name] < latest[pool_key(e)]}


def least_recently_used(states: dict[str, PoolState], exclude: str, at: str, claim_grace: float) -> PoolState | None:
    """The pool to retire to make room: seen idle by a sweep, not claimed since, least recently active."""
    idle = [
        s
        for s in states.values()
        if s.pool != exclude and s.idle_since and not s.retiring_since and not recently_used(s, at, claim_grace)
        and (s.last_used_at or "") <= s.idle_since
    ]  # fmt: skip
    return min(idle, key=lambda s: last_activity(s) or "", default=None)


def at_limit(environments: int, queues: int) -> bool:
    return environments >= MAX_COMPUTE_ENVIRONMENTS or queues >= MAX_JOB_QUEUES


def pool_limit(pool: str, environments: int, queues: int) -> Diagnosis:
    """The diagnosis of a pool that cannot be created: Batch's limits are reached and nothing can be retired."""
    return Diagnosis(
        category=DiagnosisCategory.POOL_LIMIT,
        reason=f"no room for pool {pool}: the region has {environments} compute environments and {queues} job "
        f"queues (Batch allows {MAX_COMPUTE_ENVIRONMENTS} and {MAX_JOB_QUEUES}) and none of GPU Pilot's pools is "
        "idle",
        evidence={
            "compute_environment": pool,
            "compute_environments": environments,
            "job_queues": queues,
            "max_compute_environments": MAX_COMPUTE_ENVIRONMENTS,
            "max_job_queues": MAX_JOB_QUEUES,
        },
        recommendation=POOL_LIMIT_RECOMMENDATION.format(environments=MAX_COMPUTE_ENVIRONMENTS, queues=MAX_JOB_QUEUES),
    )


POOL_NOT_READY_RECOMMENDATION = (
    "Batch usually makes a compute environment VALID within minutes. Read its status and statusReason (aws batch "
    "describe-compute-environments --compute-environments {pool}) and its job queue's (aws batch "
    "describe-job-queues --job-queues {pool}); if Batch is only slow here, or room under its 50 compute "
    "environments and 50 job queues per region takes long to make, raise GPUPILOT_PROVISION_TIMEOUT_SECONDS (the "
    "api function's setting). The job falls back to its next candidate; the pool keeps being created for later jobs."
)


def pool_not_ready(pool: str, status: str, status_reason: str | None, since: str, deadline: str, at: str) -> Diagnosis:
    """The diagnosis of a pool that was not ready by its attempt's deadline (still creating, or no room yet)."""
    waited = round(seconds_between(since, at))
    return Diagnosis(
        category=DiagnosisCategory.POOL_NOT_READY,
        reason=f"pool {pool} was not ready after {waited} s (deadline {deadline}): still {status}"
        + (f" ({status_reason})" if status_reason else ""),
        evidence={
            "compute_environment": pool,
            "status": status,
            "status_reason": status_reason,
            "provisioning_since": since,
            "deadline": deadline,
            "waited_seconds": waited,
        },
        recommendation=POOL_NOT_READY_RECOMMENDATION.format(pool=pool),
    )


RETIRE_RECOMMENDATION = {
    RetireReason.OUTDATED: "Nothing to do: its spec changed (launch template version, AMI, subnets, ...), new jobs "
    "go to its new version, and this one is deleted once the jobs in it have finished.",
    RetireReason.IDLE: "Nothing to do: it had no job for GPUPILOT_POOL_IDLE_HOURS; the next job that needs it "
    "creates it again.",
    RetireReason.INVALID: "Fix what its statusReason names; the next job that needs this pool creates a new one "
    "(INVALID again until the cause is fixed).",
    RetireReason.MAKE_ROOM: "Nothing to do: it was the least recently used idle pool, retired to make room under "
    "Batch's per-region limits for a pool a job needs.",
}


def retiring_finding(pool: str, reason: RetireReason, step: RetireStep, since: str | None, **extra: Any) -> Finding:
    """Each step of a retirement, as the sweep took it."""
    return Finding(
        kind=FindingKind.POOL_RETIRING,
        severity=Severity.INFO,
        resource=pool,
        evidence={"reason": reason.value, "step": step.value, "retiring_since": since} | extra,
        recommendation=RETIRE_RECOMMENDATION[reason],
    )
