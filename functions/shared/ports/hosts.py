"""The ports of the evidence against GPU hosts, of the hosts quarantined, and of what is done to a bad host."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # annotations only: a handler imports the domain modules it uses, not all of them
    from functions.shared.domain.core.vocabulary import JobStatus
    from functions.shared.domain.hosts.evidence import HostFault
    from functions.shared.domain.hosts.quarantine import QuarantineRecord


class HostLedger(Protocol):
    """The evidence against GPU hosts (host-side failures, kept for a window) and the hosts quarantined."""

    def record_fault(self, fault: HostFault, ttl_seconds: float) -> bool:
        """Keep one failure (once: a replayed event adds nothing); True when it is new."""
        ...

    def faults(self, since: str) -> list[HostFault]:
        """Every failure kept that ended at `since` or later (one query)."""
        ...

    def claim_sweep(self, container_instance_arn: str, ttl_seconds: float) -> bool:
        """True for the first caller only (for the TTL): who starts the sweep that quarantines the host."""
        ...

    def record_quarantine(self, record: QuarantineRecord) -> bool:
        """Record a quarantine once per instance; False when another sweep recorded it first."""
        ...

    def update_quarantine(self, record: QuarantineRecord) -> None:
        """Rewrite a recorded quarantine (what was done to it since)."""
        ...

    def quarantines(self, since: str) -> list[QuarantineRecord]:
        """The hosts quarantined at `since` or later."""
        ...

    def ledger(self, since: str) -> tuple[list[HostFault], list[QuarantineRecord]]:
        """faults(since) and quarantines(since) in one query: what the sweep weighs its hosts against."""
        ...


class HostActions(Protocol):
    """What the sweep does to, and reads of, one host beyond the fleet's census (part of ports.Fleet)."""

    def terminate_instances(self, instance_ids: list[str]) -> None: ...

    def drain(self, cluster_arn: str, container_instance_arns: list[str]) -> list[str]:
        """Set them DRAINING (ECS places no new task on them); returns those ECS could not."""
        ...

    def console_output(self, instance_id: str) -> str | None:
        """The instance's console output (the latest, decoded), None when EC2 has none or cannot give it."""
        ...


class HostNotes(Protocol):
    """What a job's timeline says of a host that hit it (part of ports.JobStore)."""

    def note_host(self, job_id: str, status: JobStatus, instance_id: str, reason: str, at: str) -> bool:
        """Append `reason` to the job's timeline (as `status`) once per host (a quarantined host that hit the job);
        False when the job is gone or the host is noted already."""
        ...
