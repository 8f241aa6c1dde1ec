"""The sweep's waste ledger: what each pool's unusable or idle instances have cost so far (domain/cost/waste.py)."""

from __future__ import annotations

from functions.shared.domain.core.money import usd_sum
from functions.shared.domain.core.vocabulary import FindingKind, MetricName
from functions.shared.domain.cost.waste import waste_of
from functions.shared.domain.diagnosis.findings import Finding
from functions.shared.domain.fleet.analysis import FleetAnalysis
from functions.shared.domain.fleet.batch import ComputeEnvironmentState, FleetState
from functions.shared.observability import logger
from functions.shared.ports import Ports
from functions.shared.usecases.cost.pricing import hourly_quotes


def record_waste(
    pools: dict[str, ComputeEnvironmentState],
    fleets: dict[str, FleetState],
    analyses: dict[str, FleetAnalysis],
    findings: list[Finding],
    at: str,
    ports: Ports,
    bad_hosts: dict[str, dict[str, str]] | None = None,
) -> float:
    """Restate every wasting instance's cost so far (`bad_hosts`: pool -> quarantined instance -> from when its cost is
    waste); emit what this sweep added, per pool. Returns the total."""
    idle_since = {f.resource: f.evidence.get("idle_since") for f in findings if f.kind == FindingKind.IDLE_POOL}
    totals: list[float] = []
    for name, fleet in fleets.items():
        analysis = analyses.get(name)
        pool = pools.get(name)
        if analysis is None or pool is None:
            continue
        types = sorted({i.instance_type for i in fleet.instances if i.alive})
        zones = sorted({i.zone for i in fleet.instances if i.zone})
        quotes = hourly_quotes(types, pool.spot, zones, ports)
        entries = waste_of(name, fleet, analysis, idle_since.get(name), at, quotes, (bad_hosts or {}).get(name))
        increments = []
        for entry in entries:
            try:
                increments.append(ports.waste.record_waste(entry))
            except Exception:
                logger.exception("could not record waste", extra={"pool": name, "instance_id": entry.instance_id})
        added = usd_sum(increments)
        if added:
            ports.metrics.add_for_pool(MetricName.WASTE_USD, name, added)
        totals.append(added)
    ports.metrics.add(MetricName.WASTE_USD, usd_sum(totals), unit="None")
    return usd_sum(totals)
