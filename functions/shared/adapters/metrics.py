"""CloudWatch metrics through Powertools' embedded metric format (flushed by the handler's decorator)."""

from __future__ import annotations

from aws_lambda_powertools.metrics import MetricUnit, single_metric

from functions.shared import constants as c
from functions.shared.domain.core.vocabulary import MetricName
from functions.shared.observability import metrics


class PowertoolsMetrics:
    """Implements ports.Metrics."""

    def add(self, name: MetricName, value: float, unit: str = "Count") -> None:
        metrics.add_metric(name=name.value, unit=unit, value=value)

    def add_for_pool(self, name: MetricName, pool: str, value: float) -> None:
        # Its own EMF record: the service-wide metric (alarmed) stays free of the pool dimension.
        with single_metric(
            name=name.value,
            unit=MetricUnit.Count,
            value=value,
            namespace=c.METRICS_NAMESPACE,
            default_dimensions={"service": c.SERVICE_NAME, "pool": pool},
        ):
            pass
