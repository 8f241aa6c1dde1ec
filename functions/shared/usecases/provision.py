"""EnsureJobQueue: create or reuse the pool (compute environment + job queue) for the current candidate.

AWS Batch refuses a job queue whose compute environments are not VALID, and a new compute environment
is CREATING for a while: the queue is created only once its compute environment is VALID, and the
workflow polls (WaitForJobQueue) until both are. An INVALID compute environment will not heal by
waiting, nor will a DISABLED queue: either is diagnosed, and the workflow falls back to the next candidate.
The pool is named after the version of its spec (a changed launch template version is a new pool), claimed
before it is used (so that no retirement takes it meanwhile), and a new one is created only under Batch's
limits (the least recently used idle pool is retired to make room; with none, POOL_LIMIT and fall back).
"""

from __future__ import annotations

from typing import Any

from functions.shared.domain.clock import now_iso
from functions.shared.domain.diagnosis import Diagnosis, disabled_queue, invalid_environment
from functions.shared.domain.offers import Candidate
from functions.shared.domain.pool_lifecycle import RetireStep
from functions.shared.domain.pools import (
    MAX_READY_CHECKS,
    ComputeEnvironmentStatus,
    Pool,
    QueueNotReady,
    QueueStatus,
    job_queue_spec,
    pool_for,
    versioned_pool,
)
from functions.shared.domain.records import AttemptRecord
from functions.shared.domain.steps import EnsureQueueInput
from functions.shared.domain.vocabulary import AttemptStatus, DiagnosisCategory, JobStatus, Remedy
from functions.shared.ports import Ports
from functions.shared.usecases.fallback import leave_offering
from functions.shared.usecases.retire import advance_retirement, make_room

# What the Step Functions console shows of a pool that cannot take the job: compute environment/queue.
BROKEN_STATUS = {
    DiagnosisCategory.COMPUTE_ENVIRONMENT_INVALID: f"{ComputeEnvironmentStatus.INVALID}/-",
    DiagnosisCategory.POOL_DISABLED: f"{ComputeEnvironmentStatus.VALID}/DISABLED",
    DiagnosisCategory.POOL_LIMIT: "NOT_CREATED/NOT_CREATED",
}


def _provisioning_reason(payload: EnsureQueueInput, candidate: Candidate, pool: str, ports: Ports) -> str:
    """Why the job is provisioning this pool: its first choice, or a fallback from the attempt that gave up."""
    target = f"{candidate.instance_type} {candidate.capacity.value} in pool {pool}"
    number = payload.selection.attempt
    if number == 1:
        return f"first choice: {target}"
    previous = ports.jobs.get_job(payload.job_id).attempts.get(number - 1)
    if previous is None:
        return f"attempt {number}: {target}"
    why = previous.diagnosis.category.value if previous.diagnosis else previous.status_reason or previous.status.value
    return f"falling back from {previous.instance_type} {previous.capacity.value} ({why}) to {target}"


def ensure_job_queue(payload: EnsureQueueInput, ports: Ports) -> QueueStatus:
    """Create what is missing of the pool, in Batch's order; say whether it can take the job yet."""
    candidate = payload.selection.current()
    pool, spec = _pool_and_spec(payload, ports)
    previous = payload.previous or {}
    checks = int(previous.get("checks", 0)) if previous.get("compute_environment") == pool.name else 0
    ports.jobs.advance(
        payload.job_id,
        JobStatus.PROVISIONING,
        attempt=payload.selection.attempt,
        fields={"instance_type": candidate.instance_type, "gpu_model": candidate.gpu_model},
        reason=_provisioning_reason(payload, candidate, pool.name, ports) if checks == 0 else None,
    )
    if not _claim(pool, ports):
        # Its retirement has started: an INVALID pool is left behind; any other is waited for (and helped
        # down), then created anew under the same name.
        environment = ports.pools.describe_compute_environment(pool.name)
        if environment is not None and environment.status == ComputeEnvironmentStatus.INVALID:
            return _broken_pool(
                payload, pool.name, invalid_environment(environment), environment.status_reason, checks, ports
            )
        step = advance_retirement(pool.name, ports)
        if step != RetireStep.DONE or not _claim(pool, ports):
            return _not_ready(pool.name, checks, f"RETIRING/{step.value}")
    environment = ports.pools.describe_compute_environment(pool.name)
    if environment is None:
        room = make_room(pool.name, ports)
        if room.diagnosis is not None:
            return _broken_pool(payload, pool.name, room.diagnosis, room.diagnosis.reason, checks, ports)
        if not room.fits:
            return _not_ready(pool.name, checks, room.status)
        ports.pools.create_compute_environment(spec)
        environment = ports.pools.describe_compute_environment(pool.name)
    environment_status = (environment.status if environment else None) or ComputeEnvironmentStatus.CREATING
    if environment is not None and environment_status == ComputeEnvironmentStatus.INVALID:
        return _broken_pool(
            payload, pool.name, invalid_environment(environment), environment.status_reason, checks, ports
        )
    queue = None
    if environment is not None and environment_status == ComputeEnvironmentStatus.VALID:
        queue = ports.pools.job_queue(pool.name)
        if queue is None:
            ports.pools.create_job_queue(job_queue_spec(pool, environment.arn))
            queue = ports.pools.job_queue(pool.name)
    if queue is not None and queue.disabled:
        return _broken_pool(payload, pool.name, disabled_queue(queue), queue.status_reason, checks, ports)
    queue_status = queue.status if queue else None
    ready = environment_status == ComputeEnvironmentStatus.VALID and queue_status == ComputeEnvironmentStatus.VALID
    if ready:
        return QueueStatus(
            job_queue=pool.name, compute_environment=pool.name, ready=True, checks=checks + 1, status="VALID/VALID"
        )
    status = f"{environment_status}/{queue_status or 'NOT_CREATED'}"
    return _not_ready(pool.name, checks, status, environment.status_reason if environment else None)


def _pool_and_spec(payload: EnsureQueueInput, ports: Ports) -> tuple[Pool, dict[str, Any]]:
    """The candidate's pool, named after the version of its spec as it would be built now."""
    settings = ports.settings
    base = pool_for(payload.selection.current(), payload.request.arch, settings.resource_prefix, payload.request.zones)
    subnets = ports.availability.subnets_in(base.zones) if base.zones else None
    template = settings.launch_template_name
    version = ports.availability.launch_template_version(template) if template else None
    return versioned_pool(base, settings, subnets, version)


def _claim(pool: Pool, ports: Ports) -> bool:
    return ports.pool_states.claim_pool(pool.name, pool.key, now_iso())


def _not_ready(pool: str, checks: int, status: str, status_reason: str | None = None) -> QueueStatus:
    """Not ready yet: the workflow waits and asks again, a bounded number of times."""
    if checks + 1 >= MAX_READY_CHECKS:
        raise QueueNotReady(f"{pool} still {status} after {checks + 1} checks")
    return QueueStatus(
        job_queue=pool,
        compute_environment=pool,
        ready=False,
        checks=checks + 1,
        status=status,
        status_reason=status_reason,
    )


def _broken_pool(
    payload: EnsureQueueInput, pool: str, diagnosis: Diagnosis, status_reason: str | None, checks: int, ports: Ports
) -> QueueStatus:
    """Record the pool that cannot take the job (INVALID compute environment, DISABLED queue) on this
    candidate's attempt, nothing submitted to it, remember its offering as unavailable, and fall back."""
    selection = payload.selection
    candidate = selection.current()
    attempt = AttemptRecord.of(
        candidate, pool, AttemptStatus.NOT_SUBMITTED, status_reason=status_reason, diagnosis=diagnosis
    )
    ports.jobs.put_attempt(payload.job_id, selection.attempt, attempt)
    leave_offering(candidate, diagnosis, ports)
    last = selection.index + 1 >= len(selection.candidates)
    return QueueStatus(
        job_queue=pool,
        compute_environment=pool,
        ready=False,
        checks=checks + 1,
        status=BROKEN_STATUS[diagnosis.category],
        status_reason=status_reason,
        remedy=Remedy.GIVE_UP if last else Remedy.FALL_BACK,
        next_index=selection.index if last else selection.index + 1,
        diagnosis=diagnosis,
    )
