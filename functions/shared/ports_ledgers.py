"""The ports of what GPU Pilot remembers between runs, beside the jobs: the offerings found unavailable, the waste
ledger, and the health sweeps' reports."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # annotations only: a handler imports the domain modules it uses, not all of them
    from functions.shared.domain.memory import UnavailableOffering
    from functions.shared.domain.shares import Occupant, SharedInstance
    from functions.shared.domain.views import HealthReport
    from functions.shared.domain.waste import WasteEntry


class OfferingMemory(Protocol):
    """Offerings (`capacity:type:zone`) remembered as unavailable, with a TTL, across executions."""

    def remember_unavailable(self, key: str, memory: UnavailableOffering) -> None:
        """Leave the offering out of selection until `memory.expires_at`, with its category and cause."""
        ...

    def unavailable_offerings(self) -> dict[str, UnavailableOffering]:
        """Every offering remembered and not yet expired, with why."""
        ...


class WasteLedger(Protocol):
    """What the fleet cost without serving a job: one item per instance, whatever reasons sweeps see it under,
    and one per instance for the share of it its jobs left unused."""

    def record_waste(self, entry: WasteEntry) -> float:
        """Charge the part of the entry's span not charged before (domain/waste.charge); returns the USD it
        added (0 if none)."""
        ...

    def record_share(self, instance: SharedInstance, key: str, attempt: Occupant) -> SharedInstance | None:
        """Add a priced attempt to its instance's ledger (`instance` when it has none yet) and restate the unused
        share (domain/shares.occupy), conditional on the ledger's version; the ledger as written, None when the
        attempt was in it already or other writers kept writing first."""
        ...

    def waste_between(self, day_from: str, day_to: str) -> list[WasteEntry]:
        """Waste of the instances that launched (registered, for unused shares) from `day_from` to `day_to`."""
        ...


class HealthStore(Protocol):
    """Health sweep reports: each by its id, and the latest."""

    def start_sweep(self, sweep_id: str) -> None: ...

    def save_report(self, report: HealthReport) -> None: ...

    def get_report(self, sweep_id: str) -> HealthReport:
        """The report; raises SweepNotFound."""
        ...

    def latest_report(self) -> HealthReport | None: ...
