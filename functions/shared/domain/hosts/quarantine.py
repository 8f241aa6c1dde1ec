"""Quarantining bad GPU hosts: what a host's console says, why a host is quarantined, the pool's share that may be at
once, the record kept and the findings the sweep reports. Pure."""

from __future__ import annotations

import math
from datetime import timedelta
from enum import StrEnum

from pydantic import Field

from functions.shared.domain.core.clock import iso, parse_iso
from functions.shared.domain.core.model import DomainModel
from functions.shared.domain.core.vocabulary import BatchStatus, FindingKind, Severity
from functions.shared.domain.diagnosis.findings import MAX_LISTED, Finding
from functions.shared.domain.fleet.consoles import BootVerdict
from functions.shared.domain.hosts.evidence import HostFault, enough_to_quarantine, jobs_hit
from functions.shared.domain.jobs.records import JobRecord

# Karpenter stops repairing a NodePool when more than 20% of its nodes report a monitored condition: "the failure
# is likely correlated (for example, a bad AMI or an Availability Zone outage) and replacing nodes would not fix it"
# (Karpenter, Disruption: Node Auto Repair). One host may always be quarantined, however small the pool.
DEFAULT_MAX_UNHEALTHY_SHARE = 0.2
FAILURES_SHOWN = 10


class QuarantineReason(StrEnum):
    """Why a host is quarantined."""

    HOST_FAILURES = "host_failures"
    BOOT_CHECK_FAILED = "boot_check_failed"
    REGISTERED_WITHOUT_GPUS = "registered_without_gpus"
    ECS_IMPAIRED = "ecs_impaired"


class HostCase(DomainModel):
    """One host of a pool the sweep looks at: what it is, and what speaks against it."""

    instance_id: str
    container_instance_arn: str | None = None
    instance_type: str = ""
    launched_at: str | None = None
    faults: list[HostFault] = Field(default_factory=list)
    reason: QuarantineReason | None = Field(default=None, description="Why it should be quarantined, if it should")
    evidence: dict[str, object] = Field(default_factory=dict)

    @property
    def suspect(self) -> bool:
        """It shows a problem (Karpenter counts a node unhealthy as soon as it reports one)."""
        return bool(self.faults) or self.reason is not None


def quarantine_reason(
    faults: list[HostFault], gpus: int, impaired: list[str], verdict: BootVerdict | None
) -> QuarantineReason | None:
    """Why a registered host should be quarantined, if it should: a failed boot check, ECS calling it IMPAIRED, no
    GPUs registered, or host failures of enough different jobs."""
    if verdict is not None and not verdict.passed:
        return QuarantineReason.BOOT_CHECK_FAILED
    if impaired:
        return QuarantineReason.ECS_IMPAIRED
    if gpus == 0:
        return QuarantineReason.REGISTERED_WITHOUT_GPUS
    if enough_to_quarantine(faults):
        return QuarantineReason.HOST_FAILURES
    return None


def allowed_at_once(alive: int, max_share: float) -> int:
    """How many of a pool's hosts may be unhealthy at once for the hosts to be blamed: a share of the pool, and one
    at least (a pool of one bad host is still a bad host)."""
    return max(1, math.floor(max_share * alive + 1e-9))


def too_many_unhealthy(unhealthy: int, alive: int, max_share: float) -> bool:
    """More unhealthy hosts than a pool's share: the cause is more likely shared (AMI, driver, launch template)."""
    return unhealthy > allowed_at_once(alive, max_share)


def last_success_on(records: list[JobRecord], container_instance_arn: str) -> str | None:
    """When the latest of these jobs' attempts that succeeded on that container instance ended, if one did."""
    ended = [
        attempt.stopped_at
        for record in records
        for attempt in record.attempts.values()
        if attempt.container_instance_arn == container_instance_arn
        and attempt.batch_status == BatchStatus.SUCCEEDED
        and attempt.stopped_at
    ]
    return max(ended, key=parse_iso) if ended else None


def success_lookback(case: HostCase, window_seconds: float) -> str | None:
    """From when the jobs that may have succeeded on a host are read: its launch, or a window before its first
    failure when it was launched earlier than that."""
    first = min((f.at for f in case.faults), key=parse_iso, default=None)
    horizon = iso(parse_iso(first) - timedelta(seconds=window_seconds)) if first else None
    candidates = [t for t in (case.launched_at, horizon) if t]
    return max(candidates, key=parse_iso) if candidates else None


def waste_since(case: HostCase, last_success: str | None = None, looked_since: str | None = None) -> str | None:
    """From when a quarantined host's cost is waste: since its last successful job ended (GPU Pilot's jobs read since
    `looked_since`); with none there, since its launch when that reading covered its whole life (it never served a
    job), else since its first failure on record (the last success ended before it: a lower bound)."""
    if last_success is not None:
        return max([last_success, *([case.launched_at] if case.launched_at else [])], key=parse_iso)
    if case.launched_at and looked_since is not None and parse_iso(looked_since) <= parse_iso(case.launched_at):
        return case.launched_at
    if case.faults:
        return min((f.at for f in case.faults), key=parse_iso)
    return case.launched_at


class QuarantineRecord(DomainModel):
    """A quarantined host, as the sweep recorded it (one per instance)."""

    instance: str
    pool: str
    reason: QuarantineReason
    evidence: dict[str, object] = Field(default_factory=dict)
    jobs_hit: list[str] = Field(default_factory=list)
    at: str
    container_instance_arn: str | None = None
    instance_type: str = ""
    waste_from: str | None = Field(default=None, description="From when its cost counts as waste (bad_host)")
    drained_at: str | None = Field(default=None, description="When ECS took the drain (no new job placed after)")
    terminated_at: str | None = Field(default=None, description="When EC2 took its termination")
    action: str = Field(default="", description="What the sweep did: drained, terminated")


REASON_WORDS = {
    QuarantineReason.HOST_FAILURES: "it failed {jobs} different jobs for reasons of its own",
    QuarantineReason.BOOT_CHECK_FAILED: "it failed its boot-time GPU check",
    QuarantineReason.REGISTERED_WITHOUT_GPUS: "it registered with ECS without its GPUs",
    QuarantineReason.ECS_IMPAIRED: "ECS's own health checks call it IMPAIRED",
}
DETAIL_CHARACTERS = 160


def describe_quarantine(record: QuarantineRecord) -> str:
    """`host i-... quarantined: <why> (<evidence>)`: the line a hit job's timeline gets."""
    why = REASON_WORDS[record.reason].format(jobs=len(record.jobs_hit))
    evidence = record.evidence
    kernel = evidence.get("kernel_gpu_errors")
    last_kernel_error = kernel[-1] if isinstance(kernel, list) and kernel else None
    details = {
        QuarantineReason.HOST_FAILURES: [evidence.get("last_failure"), last_kernel_error],
        QuarantineReason.BOOT_CHECK_FAILED: [evidence.get("boot_check")],
        QuarantineReason.ECS_IMPAIRED: [evidence.get("impaired")],
    }.get(record.reason, [])
    shown = [str(d)[:DETAIL_CHARACTERS] for d in details if d]
    return f"host {record.instance} quarantined: {why}" + (f" ({'; '.join(shown)})" if shown else "")


BAD_HOST_RECOMMENDATION = (
    "Nothing to do: GPU Pilot drained the host in ECS (no new job is placed on it) and terminated it, and Batch "
    "retried its jobs elsewhere (retryStrategy: host-side reasons and GPU check exit codes). If hosts of this pool "
    "keep going bad, look at the evidence: NVRM Xid lines point at the GPU or driver, a failed boot check at the AMI."
)
POOL_UNHEALTHY_RECOMMENDATION = (
    "Too many of this pool's hosts are bad at once for each to be a bad host: the cause is more likely shared, the "
    "AMI (ECS_AL2023_NVIDIA's driver), the launch template's user data, or the instance type's driver support. No "
    "host was terminated (the evidence stays); GPU Pilot remembers the pool's offerings as unavailable so new jobs "
    "fall back meanwhile. Inspect a host (Session Manager: nvidia-smi, journalctl -k | grep NVRM) and its console."
)


def quarantine_evidence(case: HostCase) -> dict[str, object]:
    """A quarantined host's evidence: its console's, and the failures it caused (the last ones)."""
    evidence = dict(case.evidence)
    if case.faults:
        ordered = sorted(case.faults, key=lambda f: f.at)
        evidence["last_failure"] = ordered[-1].why
        evidence["failures"] = [
            {"job": f.job_id or f.batch_job_id, "batch_job_id": f.batch_job_id, "attempt": f.attempt,
             "symptom": f.symptom.value, "why": f.why, "at": f.at}
            for f in ordered[-FAILURES_SHOWN:]
        ]  # fmt: skip
    return evidence


def bad_host_finding(record: QuarantineRecord, waiting: list[str], new: bool) -> Finding:
    """BAD_GPU_HOST: one quarantined host, its evidence, the jobs it hit, what was done; `jobs` are the pool's waiting
    jobs. Critical in the sweep that quarantined it (`new`), a warning in the window's later sweeps."""
    return Finding(
        kind=FindingKind.BAD_GPU_HOST,
        severity=Severity.CRITICAL if new else Severity.WARNING,
        resource=record.pool,
        jobs=waiting[:MAX_LISTED],
        instances=[record.instance],
        evidence={
            "instance": record.instance,
            "container_instance": record.container_instance_arn,
            "instance_type": record.instance_type,
            "reason": record.reason.value,
            "quarantined_at": record.at,
            "drained_at": record.drained_at,
            "jobs_hit": record.jobs_hit,
            "jobs_waiting": len(waiting),
            "waste_from": record.waste_from,
        }
        | record.evidence,
        recommendation=BAD_HOST_RECOMMENDATION,
        action=record.action or None,
    )


def pool_unhealthy_finding(
    pool: str, cases: list[HostCase], unhealthy: int, alive: int, max_share: float, waiting: list[str], action: str
) -> Finding:
    """POOL_UNHEALTHY: more of the pool's hosts unhealthy at once than its share; none was quarantined."""
    return Finding(
        kind=FindingKind.POOL_UNHEALTHY,
        severity=Severity.CRITICAL,
        resource=pool,
        jobs=waiting[:MAX_LISTED],
        instances=[case.instance_id for case in cases][:MAX_LISTED],
        evidence={
            "hosts_unhealthy": unhealthy,
            "hosts_alive": alive,
            "max_unhealthy_share": max_share,
            "allowed_at_once": allowed_at_once(alive, max_share),
            "jobs_waiting": len(waiting),
            "hosts": [
                {
                    "instance": case.instance_id,
                    "reason": case.reason.value if case.reason else None,
                    "jobs_hit": jobs_hit(case.faults),
                    "last_failure": max(case.faults, key=lambda f: f.at).why if case.faults else None,
                }
                for case in cases[:MAX_LISTED]
            ],
        },
        recommendation=POOL_UNHEALTHY_RECOMMENDATION,
        action=action,
    )
