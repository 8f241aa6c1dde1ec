"""A pool with more unhealthy hosts at once than its share: one POOL_UNHEALTHY finding, its offerings remembered as
unavailable, and no host drained or terminated (the AMI, the driver or the launch template is the likelier cause)."""

from __future__ import annotations

from functions.shared.domain.capacity.unavailable import UNAVAILABLE_TTL_SECONDS, clock_minute, offering_key, remembered
from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.core.vocabulary import CapacityType, FindingKind, MetricName
from functions.shared.domain.diagnosis.findings import Finding
from functions.shared.domain.fleet.batch import ComputeEnvironmentState, FleetState
from functions.shared.domain.hosts.quarantine import HostCase, pool_unhealthy_finding
from functions.shared.observability import logger
from functions.shared.ports import Ports


def unhealthy_pool(
    pool: ComputeEnvironmentState,
    fleet: FleetState,
    cases: list[HostCase],
    unhealthy: int,
    alive: int,
    waiting: list[str],
    ports: Ports,
) -> Finding:
    """The pool's finding (its unhealthy hosts, the jobs waiting in it), after remembering its offerings."""
    zones = {i.instance_id: i.zone for i in fleet.instances}
    action = _remember_offerings(pool, cases, zones, ports)
    ports.metrics.add(MetricName.UNHEALTHY_POOLS, 1)
    ports.metrics.add_for_pool(MetricName.UNHEALTHY_POOLS, pool.name, 1)
    return pool_unhealthy_finding(
        pool.name, cases, unhealthy, alive, ports.settings.max_unhealthy_share, waiting, action
    )


def _remember_offerings(
    pool: ComputeEnvironmentState, cases: list[HostCase], zones: dict[str, str], ports: Ports
) -> str:
    """An unhealthy pool's offerings are remembered as unavailable (new jobs fall back meanwhile); no host is
    terminated. Returns what was done."""
    capacity = CapacityType.SPOT if pool.spot else CapacityType.ON_DEMAND
    counts: dict[str, int] = {}
    for case in cases:
        if case.instance_type and zones.get(case.instance_id):
            key = offering_key(capacity, case.instance_type, zones[case.instance_id], ports.settings.region)
            counts[key] = counts.get(key, 0) + 1
    offerings = sorted(counts)
    at = now_iso()
    done = ["no host quarantined: more than the pool's share are unhealthy at once"]
    try:
        for key in offerings:
            cause = f"{counts[key]} unhealthy host{'s' if counts[key] != 1 else ''} at {clock_minute(at)}"
            ports.offerings.remember_unavailable(key, remembered(FindingKind.POOL_UNHEALTHY, cause, at,
                                                                 UNAVAILABLE_TTL_SECONDS))  # fmt: skip
        if offerings:
            done.append(f"remembered {pool.name}'s offerings as unavailable")
    except Exception as error:
        logger.exception("could not remember an unhealthy pool's offerings", extra={"pool": pool.name})
        done.append(f"remembering its offerings failed: {type(error).__name__}")
    return "; ".join(done)
