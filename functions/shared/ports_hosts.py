"""The port of the evidence against GPU hosts and of the hosts quarantined."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # annotations only: a handler imports the domain modules it uses, not all of them
    from functions.shared.domain.hosts import HostFault
    from functions.shared.domain.quarantine import QuarantineRecord


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
