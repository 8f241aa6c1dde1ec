"""A job queued behind instances that run other jobs: the account's vCPU quota held by running instances, or every
instance of its reservation running other jobs. Time cures both: the job starts when some of them end. Pure."""

from __future__ import annotations

from typing import Any

from functions.shared.domain.core.vocabulary import DiagnosisCategory, counted
from functions.shared.domain.diagnosis.snapshot import Diagnosis, StuckJobSnapshot
from functions.shared.domain.fleet.batch import FleetState

Category = DiagnosisCategory


def reservation_busy(snapshot: StuckJobSnapshot, reservation: str, evidence: dict[str, Any]) -> Diagnosis | None:
    """The job waits for its reservation's instances, every one of which runs other jobs; None while one of them is
    still booting or free (Batch places the job there next)."""
    fleet = snapshot.fleet or FleetState()
    alive = {i.instance_id for i in fleet.instances if i.alive}
    hosts = [c for c in fleet.container_instances if c.ec2_instance_id in alive and c.registered]
    usable = [c for c in hosts if c.agent_connected and not c.draining and c.gpus > 0]
    if not usable or len(usable) < len(alive) or any(c.running_tasks == 0 for c in usable):
        return None
    running = ", ".join(f"{c.ec2_instance_id} ({counted(c.running_tasks, 'job')})" for c in usable[:5])
    return Diagnosis(
        category=Category.WAITING_FOR_RESERVATION,
        reason=f"every instance of reservation {reservation} runs other jobs: {running}; the job starts on one of them "
        "when its jobs end",
        evidence=evidence | {"reservation": reservation, "instances_running_jobs": [c.ec2_instance_id for c in usable]},
        recommendation="Normal while they run: the reservation is paid for whether used or not, and its pool holds "
        "as many instances as it does. To run more at once, reserve more (gpupilot reservations --offerings).",
    )


def quota_held(snapshot: StuckJobSnapshot, evidence: dict[str, Any]) -> Diagnosis | None:
    """The job is queued behind running instances that hold the account's vCPU quota for its instance family: Batch
    cannot launch one more until some end (a quota too small for even one instance is another cause)."""
    quota, environment = snapshot.quota, snapshot.environment
    if quota is None or quota.used_vcpus is None or not environment.instance_types:
        return None
    smallest = min(snapshot.instance_vcpus.get(t, 0) for t in environment.instance_types) or 1
    if quota.vcpus < smallest or quota.free_vcpus >= smallest:
        return None
    holders = "; ".join(holder.words() for holder in quota.holders[:5]) or "instances GPU Pilot cannot see"
    smallest_type = min(environment.instance_types, key=lambda t: snapshot.instance_vcpus.get(t, 0))
    return Diagnosis(
        category=Category.VCPU_QUOTA_REACHED,
        reason=f"the account's vCPU quota {quota.code} ({quota.name}) is {quota.vcpus:g} and running instances hold "
        f"{quota.used_vcpus:g} of it: {holders}; Batch cannot launch another {smallest_type} ({smallest} vCPUs) "
        "until some of them end",
        evidence=evidence
        | {
            "quota_code": quota.code,
            "quota_name": quota.name,
            "quota_vcpus": quota.vcpus,
            "quota_used_vcpus": quota.used_vcpus,
            "quota_holders": [holder.model_dump() for holder in quota.holders],
        },
        recommendation="Normal while they run: the job starts when one of them ends. To run more at once, ask for "
        f"more: `aws service-quotas request-service-quota-increase --service-code ec2 --quota-code {quota.code} "
        f"--desired-value {quota.used_vcpus + smallest:g}`.",
    )
