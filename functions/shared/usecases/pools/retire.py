"""Retiring pools: taking one down in Batch's order, making room under Batch's limits, and the sweep's
retirements (outdated versions, idle pools, INVALID ones). Each step is taken by whoever comes by (the sweep,
or a workflow that waits for the pool's name or for room), as far as Batch allows now.
"""

from __future__ import annotations

from dataclasses import dataclass

from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.diagnosis.findings import Finding
from functions.shared.domain.diagnosis.runnable import Diagnosis
from functions.shared.domain.fleet.batch import ComputeEnvironmentState
from functions.shared.domain.pools.retirement import (
    RetireReason,
    RetireStep,
    at_limit,
    least_recently_used,
    outdated,
    pool_limit,
    retire_reason,
    retirement_step,
    retiring_finding,
)
from functions.shared.domain.pools.states import PoolState
from functions.shared.observability import logger
from functions.shared.ports import Ports

# Steps one call takes at most: Batch's steps are asynchronous, so in AWS one call rarely takes more than one.
MAX_STEPS = 5


def advance_retirement(pool: str, ports: Ports) -> RetireStep:
    """Take the pool down as far as Batch allows now; where it stands (DONE: gone, and forgotten)."""
    step = RetireStep.WAIT
    for _ in range(MAX_STEPS):
        step = retirement_step(ports.pools.job_queue(pool), ports.pools.describe_compute_environment(pool))
        if step == RetireStep.DELETE_QUEUE and ports.pools.queue_has_jobs(pool):
            return RetireStep.DRAIN_QUEUE
        if step == RetireStep.DONE:
            ports.pool_states.finish_retiring(pool)
            return step
        if step == RetireStep.WAIT or not _take(step, pool, ports):
            return RetireStep.WAIT
        logger.info("pool retirement step", extra={"pool": pool, "step": step.value})
    return step


def _take(step: RetireStep, pool: str, ports: Ports) -> bool:
    if step == RetireStep.DISABLE_QUEUE:
        ports.pools.disable_job_queue(pool)
        return True
    if step == RetireStep.DELETE_QUEUE:
        return ports.pools.delete_job_queue(pool)
    if step == RetireStep.DISABLE_ENVIRONMENT:
        return ports.pools.disable_compute_environment(pool)
    return ports.pools.delete_compute_environment(pool)


@dataclass(frozen=True)
class Room:
    """Whether a new pool fits under Batch's limits now: yes, not yet (a retirement is under way), or never
    (the diagnosis)."""

    fits: bool
    status: str = ""
    diagnosis: Diagnosis | None = None


def make_room(pool: str, ports: Ports) -> Room:
    """Before creating a pool: at Batch's limits, retire the least recently used idle pool (or advance the
    retirements already under way)."""
    environments, queues = ports.pools.counts()
    if not at_limit(environments, queues):
        return Room(fits=True)
    at = now_iso()
    states = ports.pool_states.pool_states()
    retiring = sorted(s.pool for s in states.values() if s.retiring_since and s.pool != pool)
    while not retiring:
        victim = least_recently_used(states, pool, at, ports.settings.pool_claim_grace_seconds)
        if victim is None:
            return Room(fits=False, diagnosis=pool_limit(pool, environments, queues))
        if ports.pool_states.start_retiring(victim.pool, RetireReason.MAKE_ROOM, at, victim.last_used_at):
            logger.info("retiring the least recently used idle pool to make room", extra={"pool": victim.pool})
            retiring = [victim.pool]
        else:
            states.pop(victim.pool)  # claimed meanwhile, or already retiring: the next one
    steps = {name: advance_retirement(name, ports) for name in retiring}
    if RetireStep.DONE in steps.values():
        environments, queues = ports.pools.counts()
        if not at_limit(environments, queues):
            return Room(fits=True)
    return Room(fits=False, status="WAITING_FOR_ROOM/" + ",".join(f"{n}:{s.value}" for n, s in steps.items()))


def sweep_retirements(
    environments: dict[str, ComputeEnvironmentState], states: dict[str, PoolState], at: str, ports: Ports
) -> list[Finding]:
    """The sweep's part: start the retirements due (outdated, idle, INVALID) and advance those under way, one
    finding per pool and step; a retirement whose compute environment Batch no longer lists (DELETED, or gone)
    is finished too."""
    newer = outdated(list(environments.values()), states)
    found: list[Finding] = []
    gone = {name for name, state in states.items() if state.retiring_since and name not in environments}
    for name in sorted(set(environments) | gone):
        state = states.get(name)
        settings = ports.settings
        environment = environments.get(name)
        if environment is None:
            reason: RetireReason | None = RetireReason((state.retire_reason if state else None) or RetireReason.IDLE)
        else:
            reason = retire_reason(
                environment, state, name in newer, at, settings.pool_idle_hours, settings.pool_claim_grace_seconds
            )
        if reason is None:
            continue
        since = state.retiring_since if state else None
        if since is None:
            if not ports.pool_states.start_retiring(name, reason, at, state.last_used_at if state else None):
                logger.info("pool claimed while its retirement started: kept", extra={"pool": name})
                continue
            since = at
        try:
            step = advance_retirement(name, ports)
        except Exception as error:
            logger.exception("pool retirement step failed", extra={"pool": name})
            step = RetireStep.WAIT
            found.append(retiring_finding(name, reason, step, since, error=f"{type(error).__name__}: {error}"[:300]))
            continue
        found.append(retiring_finding(name, reason, step, since))
    return found
