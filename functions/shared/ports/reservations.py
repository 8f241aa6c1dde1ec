"""Ports to the capacity the account reserved: its Capacity Reservations and Capacity Blocks (EC2), the Capacity
Blocks it may buy, and the offerings GPU Pilot listed (the table)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # annotations only: a handler imports the domain modules it uses, not all of them
    from functions.shared.domain.reservations.offerings import BlockOffering
    from functions.shared.domain.reservations.reservation import Reservation


class Reservations(Protocol):
    """The account's Capacity Reservations and Capacity Blocks for ML in the region (EC2), the Capacity Blocks it may
    buy, and the launch templates that target a reservation."""

    def reservations(self) -> list[Reservation]:
        """Every reservation of the account in the region as EC2 describes it (cached briefly: a plan and a sweep
        read it); SignalUnavailable when EC2 will not say."""
        ...

    def reservation(self, reservation_id: str) -> Reservation | None:
        """One reservation as EC2 describes it now (not cached), None when EC2 has none of that id."""
        ...

    def launch_template(self, base: str, base_version: int, reservation: Reservation) -> str:
        """The name of the launch template that targets the reservation, made from version `base_version` of the
        launch template `base` when it does not exist yet (its version is 1)."""
        ...

    def block_offerings(self, instance_type: str, count: int, days: int) -> list[BlockOffering]:
        """The Capacity Blocks of `count` instances for `days` whole days EC2 offers now in the region, each with the
        days asked (RequestRefused when EC2 refuses the question)."""
        ...

    def purchase_block(self, offering_id: str, tags: dict[str, str]) -> Reservation:
        """Buy the offering (its fee is charged at once), tagging its reservation; the reservation EC2 made."""
        ...


class ListedOfferings(Protocol):
    """The Capacity Block offerings GPU Pilot listed (for an hour): only one of them may be bought, once."""

    def remember_offerings(self, offerings: list[BlockOffering]) -> None: ...

    def listed_offering(self, offering_id: str) -> BlockOffering | None:
        """The offering as it was listed, None when it was not (or over an hour ago)."""
        ...

    def claim_purchase(self, offering_id: str, at: str) -> bool:
        """Mark the offering being bought; False (nothing written) when a purchase of it was claimed already."""
        ...

    def release_purchase(self, offering_id: str) -> None:
        """Undo a claim whose purchase EC2 refused (it may be tried again)."""
        ...
