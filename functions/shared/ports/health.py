"""The ports of the health sweep: its reports, and starting one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # annotations only: a handler imports the domain modules it uses, not all of them
    from functions.shared.domain.diagnosis.findings import HealthReport


class HealthStore(Protocol):
    """Health sweep reports: each by its id, and the latest."""

    def start_sweep(self, sweep_id: str) -> None: ...

    def save_report(self, report: HealthReport) -> None: ...

    def get_report(self, sweep_id: str) -> HealthReport:
        """The report; raises SweepNotFound."""
        ...

    def latest_report(self) -> HealthReport | None: ...


class Sweeps(Protocol):
    def start_sweep(self, sweep_id: str) -> None:
        """Run a health sweep asynchronously in the sweep function."""
        ...
