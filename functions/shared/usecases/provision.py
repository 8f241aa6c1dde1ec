"""EnsureJobQueue: create or reuse the pool (compute environment + job queue) for the current candidate.

AWS Batch refuses a job queue whose compute environments are not VALID, and a new compute environment
is CREATING for a while: the queue is created only once its compute environment is VALID, and the
workflow polls (WaitForJobQueue) until both are. An INVALID compute environment will not heal by
waiting, nor will a DISABLED queue: either is diagnosed, and the workflow falls back to the next candidate.
"""

from __future__ import annotations

from functions.shared.domain.diagnosis import Diagnosis, disabled_queue, invalid_environment
from functions.shared.domain.pools import (
    MAX_READY_CHECKS,
    ComputeEnvironmentStatus,
    QueueNotReady,
    QueueStatus,
    compute_environment_spec,
    job_queue_spec,
    pool_for,
)
from functions.shared.domain.records import AttemptRecord
from functions.shared.domain.steps import EnsureQueueInput
from functions.shared.domain.vocabulary import AttemptStatus, DiagnosisCategory, JobStatus, Remedy
from functions.shared.ports import Ports
from functions.shared.usecases.fallback import leave_offering

# What the Step Functions console shows of a pool that cannot take the job: compute environment/queue.
BROKEN_STATUS = {
    DiagnosisCategory.COMPUTE_ENVIRONMENT_INVALID: f"{ComputeEnvironmentStatus.INVALID}/-",
    DiagnosisCategory.POOL_DISABLED: f"{ComputeEnvironmentStatus.VALID}/DISABLED",
}


def ensure_job_queue(payload: EnsureQueueInput, ports: Ports) -> QueueStatus:
    """Create what is missing of the pool, in Batch's order; say whether it can take the job yet."""
    candidate = payload.selection.current()
    pool = pool_for(candidate, payload.request.arch, ports.settings.resource_prefix, payload.request.zones)
    previous = payload.previous or {}
    checks = int(previous.get("checks", 0)) if previous.get("compute_environment") == pool.name else 0
    ports.jobs.advance(
        payload.job_id,
        JobStatus.PROVISIONING,
        attempt=payload.selection.attempt,
        fields={"instance_type": candidate.instance_type, "gpu_model": candidate.gpu_model},
    )
    environment = ports.pools.describe_compute_environment(pool.name)
    if environment is None:
        subnets = ports.availability.subnets_in(pool.zones) if pool.zones else None
        ports.pools.create_compute_environment(compute_environment_spec(pool, ports.settings, subnets))
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
    if not ready and checks + 1 >= MAX_READY_CHECKS:
        raise QueueNotReady(f"{pool.name} still {environment_status}/{queue_status} after {checks + 1} checks")
    return QueueStatus(
        job_queue=pool.name,
        compute_environment=pool.name,
        ready=ready,
        checks=checks + 1,
        status=f"{environment_status}/{queue_status or 'NOT_CREATED'}",
        status_reason=environment.status_reason if environment else None,
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
