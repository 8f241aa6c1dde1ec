"""The port of the waste ledger: what the fleet cost without serving a job."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # annotations only: a handler imports the domain modules it uses, not all of them
    from functions.shared.domain.cost.shares import Occupant, SharedInstance
    from functions.shared.domain.cost.waste import WasteEntry


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
