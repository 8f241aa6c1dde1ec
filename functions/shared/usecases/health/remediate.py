"""The sweep's remediation: what it does about a finding, each action written into the finding itself.

Safe by default and each switchable (settings): terminate pool instances that never registered with ECS
past the grace period (they cost money and can never run a job), deregister container instances whose
agent disconnected (Batch stops placing jobs on them only then) and terminate their instances (deregistered,
they can never run a job either), remember a pool whose instances fail to register as an unavailable
offering (new jobs' selections skip it for the TTL), disable the job queue of a pool whose instances keep
failing to register (sweep after sweep), and cancel jobs RUNNABLE past the hard limit with the diagnosis as
the reason.
"""

from __future__ import annotations

from functions.shared.domain.capacity.unavailable import (
    UNAVAILABLE_TTL_SECONDS,
    clock_minute,
    fleet_cause,
    offering_key,
    remembered,
)
from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.core.errors import call_failure_words
from functions.shared.domain.core.vocabulary import CapacityType, FindingKind, MetricName, counted
from functions.shared.domain.diagnosis.findings import Finding
from functions.shared.domain.fleet.batch import BatchJobState, ComputeEnvironmentState, JobQueueState
from functions.shared.domain.pools.states import REGISTRATION_FAILURES
from functions.shared.observability import logger
from functions.shared.ports import Ports


def remediate_fleet(finding: Finding, pool: ComputeEnvironmentState, zones: dict[str, str], ports: Ports) -> None:
    """Act on one fleet finding of the pool; `zones` is instance id -> zone, for the offerings remembered."""
    settings = ports.settings
    done: list[str] = []
    step = ""
    try:
        if finding.kind in REGISTRATION_FAILURES:
            step = f"remembering {pool.name}'s offerings as unavailable"
            _remember_offerings(finding, pool, zones, ports)
            done.append(f"remembered {pool.name}'s offerings as unavailable")
        if finding.kind == FindingKind.ECS_AGENT_NOT_REGISTERED and settings.terminate_unregistered:
            step = f"terminating {', '.join(finding.instances)}"
            ports.fleet.terminate_instances(finding.instances)
            done.append(f"terminated {counted(len(finding.instances), 'instance')} that never registered")
        if finding.kind == FindingKind.AGENT_DISCONNECTED and settings.deregister_disconnected and pool.ecs_cluster_arn:
            deregistered = []
            for item in finding.evidence.get("instances", []):
                if item.get("container_instance"):
                    step = f"deregistering {item['container_instance'].rsplit('/', 1)[-1]} from ECS"
                    ports.fleet.deregister_container_instance(pool.ecs_cluster_arn, item["container_instance"])
                    deregistered.append(item["instance_id"])
            done.append(f"deregistered {counted(len(deregistered), 'container instance')} whose agent disconnected")
            if deregistered:
                # Deregistered, an instance can never run a job again: left alive it would only cost money (and
                # read, to the next sweep, as an instance that never registered).
                step = f"terminating {', '.join(deregistered)}"
                ports.fleet.terminate_instances(deregistered)
                done.append(f"terminated {counted(len(deregistered), 'deregistered instance')}")
    except Exception as error:
        logger.exception("remediation failed", extra={"pool": pool.name, "kind": finding.kind.value})
        # The finding says which step AWS refused and why (a missing grant names its action and resource).
        done.append(call_failure_words(step, error))
    _record(finding, done, ports)


def disable_failing_pool(finding: Finding, queue: JobQueueState, failures: int, ports: Ports) -> bool:
    """Disable the queue of a pool whose instances failed to register in `failures` sweeps in a row: new jobs
    go elsewhere (EnsureJobQueue falls back from a DISABLED queue); the jobs in it can still finish."""
    try:
        ports.pools.disable_job_queue(queue.name)
    except Exception as error:
        logger.exception("could not disable a failing pool", extra={"pool": queue.name})
        _record(finding, [call_failure_words(f"disabling job queue {queue.name}", error)], ports)
        return False
    _record(
        finding, [f"disabled job queue {queue.name}: {failures} sweeps in a row found instances not registering"], ports
    )
    return True


def cancel_past_limit(finding: Finding, jobs: list[BatchJobState], ports: Ports) -> None:
    """Cancel the finding's jobs that are RUNNABLE past the hard limit, with the diagnosis as Batch's reason."""
    limit_minutes = ports.settings.cancel_stuck_after_minutes
    if not limit_minutes:
        return
    reason = f"GPU Pilot: RUNNABLE past {limit_minutes:g} minutes: {finding.kind.value}"
    cancelled = 0
    failures: list[str] = []
    for job in jobs:
        try:
            ports.batch.terminate_job(job.job_id, reason[:1024])
            cancelled += 1
        except Exception as error:
            logger.exception("could not cancel a stuck job", extra={"batch_job_id": job.job_id})
            failures.append(call_failure_words(f"cancelling Batch job {job.job_id}", error))
    done = [f"cancelled {counted(cancelled, 'job')} RUNNABLE past {limit_minutes:g} minutes"] if cancelled else []
    if failures:
        done.append(failures[0] + (f" (and {counted(len(failures) - 1, 'more cancel')})" if len(failures) > 1 else ""))
    _record(finding, done, ports)


def _remember_offerings(finding: Finding, pool: ComputeEnvironmentState, zones: dict[str, str], ports: Ports) -> None:
    capacity = CapacityType.SPOT if pool.spot else CapacityType.ON_DEMAND
    counts: dict[str, int] = {}
    for item in finding.evidence.get("instances", []):
        if zones.get(item["instance_id"]):
            key = offering_key(capacity, item["instance_type"], zones[item["instance_id"]], ports.settings.region)
            counts[key] = counts.get(key, 0) + 1
    at = now_iso()
    for key, instances in sorted(counts.items()):
        cause = fleet_cause(finding.kind, instances, at) or f"{finding.kind.value} at {clock_minute(at)}"
        ports.offerings.remember_unavailable(key, remembered(finding.kind, cause, at, UNAVAILABLE_TTL_SECONDS))


def _record(finding: Finding, done: list[str], ports: Ports) -> None:
    if not done:
        return
    finding.action = "; ".join(filter(None, [finding.action, *done]))
    ports.metrics.add(MetricName.REMEDIATIONS, len(done))
