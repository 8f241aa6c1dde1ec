"""The sweep's bad GPU hosts: each pool's hosts weighed against the evidence (host-side failures of different jobs,
a failed boot check on the console, no GPUs registered, ECS's own health), quarantined within the pool's share
(recorded, drained in ECS, terminated, noted on the timelines of the jobs they hit), or, past that share, one
POOL_UNHEALTHY finding and no termination at all.

Draining first: "Amazon ECS prevents new tasks from being scheduled for placement on the container instance"
(UpdateContainerInstancesState). A host still running a task when drained is terminated by the next sweep (its job
is retried elsewhere: Batch retries "Host EC2 ... terminated"); a spot host once its tasks have ended."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from functions.shared.constants import LAMBDAS_BY_KEY
from functions.shared.domain.core.clock import iso, now_iso, parse_iso, seconds_between
from functions.shared.domain.core.errors import call_failure_words
from functions.shared.domain.core.vocabulary import MetricName, counted
from functions.shared.domain.diagnosis.findings import Finding
from functions.shared.domain.fleet.batch import ComputeEnvironmentState, ContainerInstanceState, FleetState
from functions.shared.domain.fleet.consoles import boot_verdict, console_evidence
from functions.shared.domain.hosts.evidence import HostFault, jobs_hit, recent
from functions.shared.domain.hosts.quarantine import (
    HostCase,
    QuarantineReason,
    QuarantineRecord,
    bad_host_finding,
    quarantine_evidence,
    quarantine_reason,
    too_many_unhealthy,
)
from functions.shared.observability import logger
from functions.shared.ports import Ports
from functions.shared.usecases.hosts.quarantined import note_jobs, waste_from
from functions.shared.usecases.hosts.unhealthy_pools import unhealthy_pool

MAX_CONSOLE_READS = 5  # per pool and sweep: console output is evidence, not a census
# A quarantine recorded by a sweep that has not yet said what it did is that sweep's to finish (drain, then
# terminate), unless it has run longer than a sweep can: it failed midway, and a later sweep terminates the host.
SWEEP_RUNS_AT_MOST_SECONDS = LAMBDAS_BY_KEY["health_sweep"].timeout_seconds


@dataclass
class HostSweep:
    """What the sweep found and did about its pools' hosts."""

    findings: list[Finding] = field(default_factory=list)
    # pool -> instance -> from when its cost is waste (bad_host), for the hosts quarantined and still seen alive.
    waste_from: dict[str, dict[str, str]] = field(default_factory=dict)
    # Instances whose boot check failed: BAD_GPU_HOST, not GPU_NOT_REGISTERED.
    boot_check_failed: set[str] = field(default_factory=set)
    quarantined: set[str] = field(default_factory=set)
    consoles: dict[str, str | None] = field(default_factory=dict)
    # Instance -> why its console could not be read (a refusal names the missing grant): said in its evidence.
    console_failures: dict[str, str] = field(default_factory=dict)


def read_console(
    instance_id: str, ports: Ports, consoles: dict[str, str | None], failures: dict[str, str] | None = None
) -> str | None:
    """An instance's console output, once per sweep; None when EC2 will not give it (never fatal to the sweep), and
    why in `failures`."""
    if instance_id not in consoles:
        try:
            consoles[instance_id] = ports.fleet.console_output(instance_id)
        except Exception as error:
            logger.exception("could not read the console output", extra={"instance_id": instance_id})
            consoles[instance_id] = None
            if failures is not None:
                failures[instance_id] = call_failure_words(f"reading {instance_id}'s console output", error)
    return consoles[instance_id]


def sweep_hosts(
    pools: dict[str, ComputeEnvironmentState],
    fleets: dict[str, FleetState],
    waiting: dict[str, list[str]],
    at: str,
    ports: Ports,
) -> HostSweep:
    """Every pool's hosts: quarantine the bad ones within the pool's share, report every host quarantined in the
    window (BAD_GPU_HOST) and every pool past its share (POOL_UNHEALTHY). One query of the host ledger in all."""
    window = ports.settings.bad_host_window_seconds
    since = iso(parse_iso(at) - timedelta(seconds=window))
    kept, quarantined = ports.hosts.ledger(since)
    faults = recent(kept, at, window)
    records = {record.instance: record for record in quarantined}
    swept = HostSweep()
    for name, fleet in sorted(fleets.items()):
        pool = pools.get(name)
        if pool is None:
            continue
        arns = {c.arn for c in fleet.container_instances}
        here = [f for f in faults if f.pool == name or f.container_instance_arn in arns]
        _sweep_pool(pool, fleet, here, records, waiting.get(name, []), at, ports, swept)
        for record in sorted((r for r in records.values() if r.pool == name), key=lambda r: r.at):
            swept.findings.append(bad_host_finding(record, waiting.get(name, []), record.instance in swept.quarantined))
    return swept


def _sweep_pool(
    pool: ComputeEnvironmentState,
    fleet: FleetState,
    faults: list[HostFault],
    records: dict[str, QuarantineRecord],
    waiting: list[str],
    at: str,
    ports: Ports,
    swept: HostSweep,
) -> None:
    settings = ports.settings
    alive = {i.instance_id: i for i in fleet.instances if i.alive}
    containers = {c.ec2_instance_id: c for c in fleet.container_instances if c.registered}
    cases: list[tuple[HostCase, ContainerInstanceState]] = []
    still_quarantined, reads = 0, 0
    for instance_id, instance in sorted(alive.items()):
        container = containers.get(instance_id)
        if container is None:
            continue  # never registered: the sweep's own remediation (terminate past the grace) deals with it
        if instance_id in records:
            still_quarantined += 1
            if settings.quarantine_bad_hosts:
                _finish(records[instance_id], container, pool.spot, ports, swept, at)
            continue
        if container.draining:
            continue  # drained by someone else (an operator): not ours to judge
        against = [f for f in faults if f.container_instance_arn == container.arn]
        verdict = None
        if container.gpus == 0 and reads < MAX_CONSOLE_READS:
            reads += 1
            verdict = boot_verdict(read_console(instance_id, ports, swept.consoles, swept.console_failures))
        case = HostCase(
            instance_id=instance_id,
            container_instance_arn=container.arn,
            instance_type=instance.instance_type or container.instance_type,
            launched_at=instance.launched_at,
            faults=against,
            reason=quarantine_reason(against, container.gpus, container.impaired, verdict),
        )
        if case.reason == QuarantineReason.BOOT_CHECK_FAILED:
            swept.boot_check_failed.add(instance_id)
        if case.suspect:
            cases.append((case, container))
    candidates = [(case, container) for case, container in cases if case.reason is not None]
    if not candidates:
        return
    unhealthy = len(cases) + still_quarantined
    if too_many_unhealthy(unhealthy, len(alive), settings.max_unhealthy_share):
        swept.findings.append(unhealthy_pool(pool, fleet, [c for c, _ in cases], unhealthy, len(alive), waiting, ports))
        return
    if not settings.quarantine_bad_hosts:
        return
    for case, container in candidates:
        # Its console: the boot check's verdict, the kernel's Xid lines (of the few hosts quarantined at once).
        case.evidence = console_evidence(read_console(case.instance_id, ports, swept.consoles, swept.console_failures))
        if case.instance_id in swept.console_failures:
            case.evidence["console"] = swept.console_failures[case.instance_id]
        if container.impaired:
            case.evidence["impaired"] = "; ".join(container.impaired)
        _quarantine(pool, case, container, at, ports, swept, records)


def _quarantine(
    pool: ComputeEnvironmentState,
    case: HostCase,
    container: ContainerInstanceState,
    at: str,
    ports: Ports,
    swept: HostSweep,
    records: dict[str, QuarantineRecord],
) -> None:
    """Record it (once: a racing sweep that recorded it first does the rest), drain it, terminate it if it runs
    nothing, note it on the timelines of the jobs it hit."""
    assert case.reason is not None
    record = QuarantineRecord(
        instance=case.instance_id,
        pool=pool.name,
        reason=case.reason,
        evidence=quarantine_evidence(case),
        jobs_hit=jobs_hit(case.faults),
        at=at,
        container_instance_arn=case.container_instance_arn,
        instance_type=case.instance_type,
        waste_from=waste_from(case, ports),
    )
    if not ports.hosts.record_quarantine(record):
        return
    records[record.instance] = record
    swept.quarantined.add(record.instance)
    done: list[str] = []
    step = ""
    try:
        if pool.ecs_cluster_arn:
            step = f"draining {container.arn.rsplit('/', 1)[-1]} in ECS"
            refused = ports.fleet.drain(pool.ecs_cluster_arn, [container.arn])
            done.append("ECS refused to drain it" if refused else f"drained {container.arn.rsplit('/', 1)[-1]} in ECS")
            record.drained_at = None if refused else now_iso()
        if container.running_tasks == 0:
            step = f"terminating {case.instance_id}"
            ports.fleet.terminate_instances([case.instance_id])
            done.append(f"terminated {case.instance_id}")
            record.terminated_at = now_iso()
        elif pool.spot:
            done.append(f"{counted(container.running_tasks, 'task')} still running: terminated once they end (spot)")
        else:
            done.append(f"{counted(container.running_tasks, 'task')} still running: terminated by the next sweep")
    except Exception as error:
        logger.exception("quarantine failed", extra={"instance_id": case.instance_id, "pool": pool.name})
        # The finding says which step AWS refused and why (a missing grant names its action and resource).
        done.append(call_failure_words(step, error))
    record.action = "; ".join(done)
    ports.hosts.update_quarantine(record)
    if record.waste_from:
        swept.waste_from.setdefault(pool.name, {})[record.instance] = record.waste_from
    ports.metrics.add(MetricName.QUARANTINED_HOSTS, 1)
    ports.metrics.add_for_pool(MetricName.QUARANTINED_HOSTS, pool.name, 1)
    ports.metrics.add(MetricName.REMEDIATIONS, len(done))
    note_jobs(record, case.faults, ports)


def _finish(
    record: QuarantineRecord, container: ContainerInstanceState, spot: bool, ports: Ports, swept: HostSweep, at: str
) -> None:
    """A host quarantined earlier and still alive (it ran a task when drained): terminate it now. A spot host only
    once it runs nothing: Batch says "Host EC2 (instance ...) terminated." of a spot reclaim and of our termination
    alike, and a spot attempt that ends so moves its job to its next candidate (spot_reclaims_before_fallback) and
    remembers the spot offering as unavailable. Drained, it takes no new job meanwhile."""
    if record.waste_from:
        swept.waste_from.setdefault(record.pool, {})[record.instance] = record.waste_from
    if record.terminated_at is not None or (spot and container.running_tasks):
        return  # terminated already (EC2 lists it a while yet), or a spot host whose task has not ended
    if not record.action and seconds_between(record.at, at) < SWEEP_RUNS_AT_MOST_SECONDS:
        return  # another sweep is quarantining it now: it drains before it terminates
    try:
        ports.fleet.terminate_instances([record.instance])
        done = f"terminated {record.instance} at {at}"
        record.terminated_at = at
    except Exception as error:
        logger.exception("could not terminate a quarantined host", extra={"instance_id": record.instance})
        done = call_failure_words(f"terminating {record.instance} at {at}", error)
    record.action = "; ".join(filter(None, [record.action, done]))
    ports.hosts.update_quarantine(record)
