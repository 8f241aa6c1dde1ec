"""The health sweep: the safety net that makes a missed Batch event harmless, and the fleet's health report.

It runs in the health_sweep function only (on its schedule, or started by POST /sweep), never inside
an API request: API Gateway gives a request 29 seconds.
"""

from __future__ import annotations

from functools import cache

from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.core.errors import aws_failure_words
from functions.shared.domain.core.vocabulary import BatchStatus, FindingKind, MetricName, Severity, SweepStatus
from functions.shared.domain.diagnosis.findings import MAX_LISTED, Finding, HealthReport, SweepStarted
from functions.shared.domain.fleet.analysis import analyse_fleet
from functions.shared.domain.fleet.consoles import console_evidence
from functions.shared.domain.health.idle import gpu_idle_findings
from functions.shared.domain.health.sweep import (
    fleet_findings,
    invalid_environment_finding,
    new_sweep_id,
    region_unreachable_finding,
    report,
)
from functions.shared.domain.jobs.records import ActiveJob
from functions.shared.domain.pools.specs import ComputeEnvironmentStatus
from functions.shared.observability import logger
from functions.shared.ports import Ports
from functions.shared.usecases.cost.waste import record_waste
from functions.shared.usecases.health.jobs import SweptJobs, sweep_jobs
from functions.shared.usecases.health.pools import pool_findings
from functions.shared.usecases.health.remediate import remediate_fleet
from functions.shared.usecases.health.stuck import stuck_findings
from functions.shared.usecases.hosts.quarantine import MAX_CONSOLE_READS, read_console, sweep_hosts
from functions.shared.usecases.reservations.account import record_reservation_waste

HOLDS_UP_ITS_POOL = frozenset(
    {
        FindingKind.ECS_AGENT_NOT_REGISTERED,
        FindingKind.GPU_NOT_REGISTERED,
        FindingKind.AGENT_DISCONNECTED,
        FindingKind.BAD_GPU_HOST,
        FindingKind.POOL_UNHEALTHY,
        FindingKind.POOL_DISABLED,
        FindingKind.COMPUTE_ENVIRONMENT_INVALID,
    }
)
FLEET_METRICS = {
    FindingKind.ECS_AGENT_NOT_REGISTERED: MetricName.UNREGISTERED_INSTANCES,
    FindingKind.GPU_NOT_REGISTERED: MetricName.GPU_LESS_INSTANCES,
    FindingKind.AGENT_DISCONNECTED: MetricName.DISCONNECTED_AGENTS,
}


def start_sweep(ports: Ports) -> SweepStarted:
    """POST /sweep: record a RUNNING sweep and start it in the sweep function."""
    sweep_id = new_sweep_id()
    ports.health.start_sweep(sweep_id)
    ports.sweeps.start_sweep(sweep_id)
    return SweepStarted(sweep_id=sweep_id)


def health(sweep_id: str | None, ports: Ports) -> HealthReport:
    """GET /health: that sweep (SweepNotFound when unknown), or the latest finished one."""
    if sweep_id is not None:
        return ports.health.get_report(sweep_id)
    latest = ports.health.latest_report()
    # None yet: an empty report whose status says no sweep stands behind it.
    return latest or HealthReport(status=None, swept_at=None, findings=[], summary={"findings": 0})


def run_sweep(sweep_id: str | None, ports: Ports) -> HealthReport:
    """Every GPU Pilot pool: its fleet, its queue's live jobs (ours and others'), the records of unfinished
    jobs; find what is stuck or broken, act where it is safe, record and emit it all.

    A sweep that fails is recorded FAILED with the error (so whoever waits on it stops waiting), then raised
    (so Lambda retries it and, in the end, its on-failure queue keeps it)."""
    sweep_id = sweep_id or new_sweep_id()
    try:
        return _sweep(sweep_id, ports)
    except Exception as error:
        failed = HealthReport(
            sweep_id=sweep_id,
            status=SweepStatus.FAILED,
            swept_at=now_iso(),
            findings=[],
            summary={"findings": 0},
            error=f"{type(error).__name__}: {error}"[:1000],
        )
        ports.health.save_report(failed)
        raise


def _sweep(sweep_id: str, ports: Ports) -> HealthReport:
    """Every capacity region in turn (each its pools, fleets and queued jobs), then one report of them all."""
    at = now_iso()
    records = ports.jobs.active_jobs()

    @cache
    def previous_sweep() -> str | None:
        """When the sweep before this one ran: read once, and only if a region holds a reservation to charge."""
        latest = ports.health.latest_report()
        return latest.swept_at if latest else None

    findings: list[Finding] = []
    reconciled = vanished = live = 0
    for region in ports.settings.regions:
        try:
            regional = ports.in_region(region)
            found, swept = _sweep_region(regional, records, at)
            # The region's reservations' idle hours since the sweep before (paid for whether used or not).
            record_reservation_waste(previous_sweep, at, regional)
        except Exception as error:
            if region == ports.settings.home:
                raise  # the home region holds the table and the workflow: a sweep without it has failed
            # One capacity region that cannot be read leaves the others swept, and says so.
            failure = aws_failure_words(error)
            logger.warning("capacity region not swept", extra={"region": region, "error": failure})
            findings.append(region_unreachable_finding(region, failure))
            continue
        for finding in found:
            finding.region = region
        findings += found
        reconciled, vanished, live = (
            reconciled + swept.reconciled,
            vanished + len(swept.vanished),
            live + len(swept.live),
        )
    # Jobs whose GPUs idle past their idle_policy (warn): from the records already read, no call of their own.
    findings += gpu_idle_findings(records, ports.settings.home)
    result = report(sweep_id, at, findings, reconciled)
    result.summary["vanished_jobs"] = vanished
    result.summary["live_jobs"] = live
    result.summary["regions"] = len(ports.settings.regions)
    ports.health.save_report(result)
    _emit(findings, reconciled, ports)
    return result


def _sweep_region(ports: Ports, records: list[ActiveJob], at: str) -> tuple[list[Finding], SweptJobs]:
    """One capacity region: its pools, their fleets and queued jobs, the records of jobs whose attempt is there."""
    settings = ports.settings
    # What Batch deleted it still shows (DELETED) for a while: no pool to sweep any more.
    pools = {
        e.name: e
        for e in ports.pools.compute_environments(settings.resource_prefix)
        if e.status != ComputeEnvironmentStatus.DELETED
    }
    queues = {
        q.name: q
        for q in ports.pools.job_queues(settings.resource_prefix)
        if q.status != ComputeEnvironmentStatus.DELETED
    }
    fleets = ports.fleet.fleets({name: e.ecs_cluster_arn for name, e in pools.items() if e.ecs_cluster_arn})
    swept = sweep_jobs(sorted(queues), at, ports, records)
    waiting = _waiting_jobs(swept)
    instance_vcpus = {name: gpu.vcpus for name, gpu in ports.catalog.gpu_types().items()}
    analyses = {
        name: analyse_fleet(fleet, at, instance_vcpus, settings.registration_grace_seconds)
        for name, fleet in fleets.items()
    }
    invalid = [f for f in map(invalid_environment_finding, pools.values()) if f]
    hosts = sweep_hosts(pools, fleets, waiting, at, ports)
    fleet_found: list[Finding] = []
    for name, analysis in analyses.items():
        zones = {i.instance_id: i.zone for i in fleets[name].instances}
        # A host that failed its boot check is a bad host (BAD_GPU_HOST), not a configuration without GPU support.
        seen = analysis.model_copy(
            update={"gpu_less": [i for i in analysis.gpu_less if i.instance_id not in hosts.boot_check_failed]}
        )
        for finding in fleet_findings(pools[name], seen):
            _console_evidence(finding, ports, hosts.consoles)
            remediate_fleet(finding, pools[name], zones, ports)
            fleet_found.append(finding)
            ports.metrics.add_for_pool(FLEET_METRICS[finding.kind], name, len(finding.instances))
    findings = fleet_found + hosts.findings + pool_findings(pools, queues, fleets, swept, fleet_found, at, ports)
    findings += stuck_findings(swept, pools, fleets, analyses, invalid, at, ports)
    for finding in findings:
        # A host or pool finding names what it holds up: the jobs waiting in its pool (stuck ones name themselves).
        if not finding.jobs and finding.kind in HOLDS_UP_ITS_POOL:
            finding.jobs = waiting.get(finding.resource, [])[:MAX_LISTED]
    record_waste(pools, fleets, analyses, findings, at, ports, bad_hosts=hosts.waste_from)
    return findings, swept


def _waiting_jobs(swept: SweptJobs) -> dict[str, list[str]]:
    """pool -> the jobs RUNNABLE in its queue (GPU Pilot's job ids, Batch's for others' jobs), oldest first: what a
    host or pool finding holds up."""
    waiting: dict[str, list[str]] = {}
    runnable = [job for job in swept.live.values() if job.status == BatchStatus.RUNNABLE]
    for job in sorted(runnable, key=lambda j: j.created_at or ""):
        owner = swept.owners.get(job.job_id)
        waiting.setdefault(job.job_queue.rsplit("/", 1)[-1], []).append(owner.job_id if owner else job.job_id)
    return waiting


def _console_evidence(finding: Finding, ports: Ports, consoles: dict[str, str | None]) -> None:
    """What the first instances of a registration finding printed on their console (the boot check's verdict, the
    kernel's GPU errors, the last lines): why they never registered, or registered without GPUs."""
    if finding.kind not in (FindingKind.ECS_AGENT_NOT_REGISTERED, FindingKind.GPU_NOT_REGISTERED):
        return
    printed = {}
    for instance_id in finding.instances[:MAX_CONSOLE_READS]:
        evidence = console_evidence(read_console(instance_id, ports, consoles))
        if evidence:
            printed[instance_id] = evidence
    if printed:
        finding.evidence["console"] = printed


def _emit(findings: list[Finding], reconciled: int, ports: Ports) -> None:
    """Service-wide counts (alarmed), and the stuck jobs per pool."""
    stuck = [f for f in findings if f.jobs and f.severity != Severity.INFO]
    ports.metrics.add(MetricName.STUCK_JOBS, sum(int(f.evidence.get("jobs_stuck", len(f.jobs))) for f in stuck))
    for finding in stuck:
        ports.metrics.add_for_pool(MetricName.STUCK_JOBS, finding.resource, finding.evidence.get("jobs_stuck", 1))
    ports.metrics.add(
        MetricName.INVALID_COMPUTE_ENVIRONMENTS,
        sum(1 for f in findings if f.kind == FindingKind.COMPUTE_ENVIRONMENT_INVALID),
    )
    for kind, metric in FLEET_METRICS.items():
        ports.metrics.add(metric, sum(len(f.instances) for f in findings if f.kind == kind))
    ports.metrics.add(MetricName.RECONCILED_EVENTS, reconciled)
