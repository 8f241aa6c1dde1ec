"""The port of the control plane's metrics (CloudWatch, through Powertools' EMF)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # annotations only: a handler imports the domain modules it uses, not all of them
    from functions.shared.domain.core.vocabulary import MetricName


class Metrics(Protocol):
    def add(self, name: MetricName, value: float, unit: str = "Count") -> None: ...

    def add_for_pool(self, name: MetricName, pool: str, value: float) -> None:
        """A count with the pool as a dimension (low cardinality: pools are few; never a job id)."""
        ...
