"""The sweep's pools: idle ones, disabled ones, and those whose instances keep failing to register.

One read of every pool's state per sweep, a conditional write only for a pool whose state changed: a sweep
over busy, healthy pools costs one DynamoDB query.
"""

from __future__ import annotations

from collections import Counter

from functions.shared.domain.core.vocabulary import FindingKind, MetricName, Severity
from functions.shared.domain.diagnosis.findings import Finding
from functions.shared.domain.fleet.batch import ComputeEnvironmentState, FleetState, JobQueueState
from functions.shared.domain.pools.states import (
    REGISTRATION_FAILURES,
    PoolState,
    disabled_finding,
    idle_finding,
    next_state,
    should_disable,
)
from functions.shared.observability import logger
from functions.shared.ports import Ports
from functions.shared.usecases.health.jobs import SweptJobs
from functions.shared.usecases.health.remediate import disable_failing_pool
from functions.shared.usecases.pools.retire import sweep_retirements


def pool_findings(
    environments: dict[str, ComputeEnvironmentState],
    queues: dict[str, JobQueueState],
    fleets: dict[str, FleetState],
    swept: SweptJobs,
    fleet_found: list[Finding],
    at: str,
    ports: Ports,
) -> list[Finding]:
    """Every pool (a queue, a fleet, or both): remember it, disable it if it keeps failing, report it if
    its queue is DISABLED or it has no live job; then retire the pools due (outdated, idle, INVALID)."""
    settings = ports.settings
    states = ports.pool_states.pool_states()
    live = Counter(job.job_queue.rsplit("/", 1)[-1] for job in swept.live.values())
    failing = {f.resource: f for f in fleet_found if f.kind in REGISTRATION_FAILURES}
    found: list[Finding] = []
    current: dict[str, PoolState] = {}
    for name in sorted(set(queues) | set(fleets)):
        previous = states.get(name) or PoolState(pool=name)
        state = next_state(previous, name, at, idle=not live[name], failed_registration=name in failing)
        queue = queues.get(name)
        if queue is not None and should_disable(state, queue, settings.disable_pool_after_failures):
            if disable_failing_pool(failing[name], queue, state.registration_failures, ports):
                state.disabled_at = at
                queue = queue.model_copy(update={"state": "DISABLED"})
        elif queue is not None and not queue.disabled:
            state.disabled_at = None
        current[name] = state
        if queue is not None and queue.disabled and not state.retiring_since:
            found.append(disabled_finding(queue, state, live[name]))
        if state.idle_since and not state.retiring_since:
            alive = [i.instance_id for i in fleets.get(name, FleetState()).instances if i.alive]
            found.append(idle_finding(state, alive, at, settings.idle_grace_seconds))
        if not state.same_as(previous) and not ports.pool_states.save_pool_state(state):
            logger.info("another sweep wrote the pool's state first", extra={"pool": name})
    found += sweep_retirements(environments, states | current, at, ports)
    _emit(found, ports)
    return found


def _emit(found: list[Finding], ports: Ports) -> None:
    disabled = [f for f in found if f.kind == FindingKind.POOL_DISABLED]
    idle = [f for f in found if f.kind == FindingKind.IDLE_POOL]
    wasting = [f for f in idle if f.severity == Severity.WARNING]
    ports.metrics.add(MetricName.DISABLED_POOLS, len(disabled))
    ports.metrics.add(MetricName.IDLE_POOLS, len(idle))
    ports.metrics.add(MetricName.RETIRING_POOLS, sum(1 for f in found if f.kind == FindingKind.POOL_RETIRING))
    ports.metrics.add(MetricName.IDLE_INSTANCES, sum(f.evidence["instances_alive"] for f in wasting))
    for finding in wasting:
        ports.metrics.add_for_pool(MetricName.IDLE_INSTANCES, finding.resource, finding.evidence["instances_alive"])
