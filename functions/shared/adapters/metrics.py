"""CloudWatch metrics through Powertools' embedded metric format (flushed by the handler's decorator)."""

from __future__ import annotations

from functions.shared.domain.vocabulary import MetricName
from functions.shared.observability import metrics


class PowertoolsMetrics:
    """Implements ports.Metrics."""

    def add(self, name: MetricName, value: float, unit: str = "Count") -> None:
        metrics.add_metric(name=name.value, unit=unit, value=value)
