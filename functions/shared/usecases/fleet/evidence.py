"""Reading what a real account shows about a waiting job: its pool, the pool's fleet, the vCPU quota."""

from __future__ import annotations

from functions.shared.domain.capacity.quotas import QuotaState, RunningInstances, quota_holders, vcpu_quota_code
from functions.shared.domain.core.errors import SignalUnavailable
from functions.shared.domain.diagnosis.runnable import StuckJobSnapshot
from functions.shared.domain.fleet.analysis import FleetAnalysis, analyse_fleet
from functions.shared.domain.fleet.batch import BatchJobState, ComputeEnvironmentState, FleetState
from functions.shared.observability import logger
from functions.shared.ports import Ports

# Instances whose console output a diagnosis reads (the few it names first).
CONSOLES_READ = 3


def read_snapshot(
    job: BatchJobState,
    environment: ComputeEnvironmentState,
    fleet: FleetState | None,
    at: str,
    ports: Ports,
    analysis: FleetAnalysis | None = None,
    running: dict[bool, list[RunningInstances]] | None = None,
) -> StuckJobSnapshot:
    """The snapshot diagnosis reads. The quota (and what holds it) is read only when Batch would have to launch an
    instance for the job and none is on its way: the pool has no instance, or every one it has is usable (so the
    job waits for room). A quota Service Quotas will not tell is left out, and said in the evidence. `running`:
    the account's running instances by capacity type, kept by a caller that reads many snapshots (the sweep) so
    each is read once."""
    instance_vcpus = {name: gpu.vcpus for name, gpu in ports.catalog.gpu_types().items()}
    quota: QuotaState | None = None
    unavailable: str | None = None
    code = vcpu_quota_code(environment.instance_types[0], environment.spot) if environment.instance_types else None
    if fleet is not None and code is not None:
        analysis = analysis or analyse_fleet(fleet, at, instance_vcpus, ports.settings.registration_grace_seconds)
    if fleet is not None and code is not None and analysis is not None and analysis.usable == analysis.alive:
        try:
            quota = ports.quotas.vcpu_quota(code)
        except SignalUnavailable as error:
            unavailable = f"{error.operation}: {error.code}"
        if quota is not None:
            # What the quota counts: every running instance of its families and capacity type in the account.
            running = {} if running is None else running
            if environment.spot not in running:
                running[environment.spot] = ports.fleet.running_instances(environment.spot)
            holders = quota_holders(running[environment.spot], code, environment.spot, instance_vcpus)
            quota = quota.model_copy(update={"used_vcpus": float(sum(h.vcpus for h in holders)), "holders": holders})
    grace = ports.settings.registration_grace_seconds
    if fleet is not None and analysis is None:
        analysis = analyse_fleet(fleet, at, instance_vcpus, grace)
    return StuckJobSnapshot(
        job=job,
        environment=environment,
        at=at,
        fleet=fleet,
        instance_vcpus=instance_vcpus,
        quota=quota,
        quota_unavailable=unavailable,
        registration_grace_seconds=grace,
        launch_grace_seconds=ports.settings.launch_grace_seconds,
        fleet_analysis=analysis,
        consoles=_consoles(analysis, ports) if analysis is not None else {},
    )


def _consoles(analysis: FleetAnalysis, ports: Ports) -> dict[str, str]:
    """The console output of the first instances that never registered (or registered without GPUs), when they are
    what a diagnosis will be about (no instance usable): so it says what they printed, not only that they are
    missing. A console EC2 will not give is left out."""
    if analysis.usable:
        return {}
    named = (analysis.unregistered or analysis.gpu_less)[:CONSOLES_READ]
    found: dict[str, str] = {}
    for item in named:
        try:
            output = ports.fleet.console_output(item.instance_id)
        except Exception:
            logger.exception("could not read the console output", extra={"instance_id": item.instance_id})
            continue
        if output:
            found[item.instance_id] = output
    return found


def pool_evidence(job: BatchJobState, pool: str, at: str, ports: Ports) -> StuckJobSnapshot:
    """Everything about one job's pool, read now."""
    environment = ports.pools.describe_compute_environment(pool) or ComputeEnvironmentState(name=pool)
    fleet = ports.fleet.fleets({pool: environment.ecs_cluster_arn})[pool]
    return read_snapshot(job, environment, fleet, at, ports)
