"""Ports to what the market and the account say about GPU offerings: the catalog, offerings and spot
placement per zone, prices, quotas. Gathered by functions/shared/ports (`Ports`).

A market signal AWS will not give (refused, or failing past botocore's retries) raises SignalUnavailable
(domain/core/errors.py): selection ranks without it, and costing leaves the attempt unpriced."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # annotations only: a handler imports the domain modules it uses, not all of them
    from functions.shared.domain.capacity.catalog import GpuType
    from functions.shared.domain.capacity.market import AvailabilitySnapshot
    from functions.shared.domain.capacity.quotas import QuotaState
    from functions.shared.domain.capacity.unavailable import UnavailableOffering
    from functions.shared.domain.core.errors import SignalUnavailable
    from functions.shared.domain.core.money import PriceQuote


class Quotas(Protocol):
    def vcpu_quota(self, code: str) -> QuotaState | None:
        """The account's EC2 vCPU quota of that code, or None when Service Quotas does not know it
        (SignalUnavailable when Service Quotas will not say)."""
        ...


class Catalog(Protocol):
    """NVIDIA GPU instance types."""

    @property
    def source(self) -> str: ...

    def gpu_types(self) -> dict[str, GpuType]: ...


class Availability(Protocol):
    """What the region offers now in the deployment's zones."""

    def snapshot(self, instance_types: list[str], unavailable: set[str]) -> AvailabilitySnapshot: ...

    def subnets_in(self, zones: list[str]) -> list[str]:
        """The deployment's subnets in those zones."""
        ...

    def placement_scores(self, instance_types: list[str]) -> dict[str, dict[str, int]]:
        """instance type -> zone -> spot placement score (1-10) of the types asked together (AWS scores a set),
        for one instance, in the deployment's region (SignalUnavailable when EC2 will not say)."""
        ...

    def launch_template_version(self, name: str) -> int | None:
        """The launch template's latest version number (None when there is no such template)."""
        ...


class Prices(Protocol):
    def on_demand(self, instance_type: str) -> PriceQuote | None:
        """The on-demand price: the Price List's, else the bundled snapshot's of the region (None: neither)."""
        ...

    def price_list_unavailable(self) -> SignalUnavailable | None:
        """Why on-demand prices do not come from the AWS Price List now (None: they do)."""
        ...

    def spot(self, instance_types: list[str], zones: list[str]) -> dict[str, dict[str, PriceQuote]]:
        """instance type -> zone -> the latest spot price there (Linux/UNIX)."""
        ...

    def spot_over(self, instance_type: str, zones: list[str], start: str, stop: str) -> PriceQuote | None:
        """The spot price averaged over [start, stop] in the cheapest of the zones (None: no history)."""
        ...


class OfferingMemory(Protocol):
    """Offerings (`capacity:type:zone`) remembered as unavailable, with a TTL, across executions."""

    def remember_unavailable(self, key: str, memory: UnavailableOffering) -> None:
        """Leave the offering out of selection until `memory.expires_at`, with its category and cause."""
        ...

    def unavailable_offerings(self) -> dict[str, UnavailableOffering]:
        """Every offering remembered and not yet expired, with why."""
        ...
