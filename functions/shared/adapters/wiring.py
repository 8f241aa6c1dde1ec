"""The composition root: the real adapters behind the ports, built once per process (per environment).

Each adapter is imported and built on the port's first use, so a handler's cold start loads only the
adapters (and the domain models they bring) that its use case reaches.
"""

from __future__ import annotations

from functools import cache, cached_property
from typing import TYPE_CHECKING

from functions.shared.adapters.config import settings
from functions.shared.domain.settings import Settings
from functions.shared.ports import Ports

if TYPE_CHECKING:
    from functions.shared.adapters.spot import Ec2SpotMarket
    from functions.shared.ports import (
        BatchJobs,
        Fleet,
        HealthStore,
        HostLedger,
        JobLogs,
        JobStore,
        Metrics,
        OfferingMemory,
        Sweeps,
        WasteLedger,
        Workflow,
    )
    from functions.shared.ports_market import Availability, Catalog, Prices, Quotas
    from functions.shared.ports_pools import BatchPools, PoolStates
    from functions.shared.ports_reservations import ListedOfferings, Reservations


def live_ports() -> Ports:
    """Ports over AWS for the calling function's settings; adapters make their clients on first use."""
    return _ports(settings().model_dump_json())


@cache
def _ports(config_json: str) -> Ports:
    return LivePorts(Settings.model_validate_json(config_json))


class LivePorts(Ports):
    """Ports whose adapters are imported and built on first use (each once: cached_property)."""

    def __init__(self, settings: Settings) -> None:  # the dataclass is frozen: set its one stored field
        object.__setattr__(self, "settings", settings)

    @cached_property
    def jobs(self) -> JobStore:
        from functions.shared.adapters.job_store import DynamoJobStore

        return DynamoJobStore(self.settings.table_name)

    @cached_property
    def offerings(self) -> OfferingMemory:
        from functions.shared.adapters.table_store import DynamoOfferingMemory

        return DynamoOfferingMemory(self.settings.table_name)

    @cached_property
    def health(self) -> HealthStore:
        from functions.shared.adapters.table_store import DynamoHealthStore

        return DynamoHealthStore(self.settings.table_name)

    @cached_property
    def pool_states(self) -> PoolStates:
        from functions.shared.adapters.pool_store import DynamoPoolStates

        return DynamoPoolStates(self.settings.table_name)

    @cached_property
    def waste(self) -> WasteLedger:
        from functions.shared.adapters.table_store import DynamoWasteLedger

        return DynamoWasteLedger(self.settings.table_name)

    @cached_property
    def hosts(self) -> HostLedger:
        from functions.shared.adapters.host_store import DynamoHostLedger

        return DynamoHostLedger(self.settings.table_name)

    @cached_property
    def batch(self) -> BatchJobs:
        from functions.shared.adapters.batch import BatchJobsAdapter

        return BatchJobsAdapter()

    @cached_property
    def pools(self) -> BatchPools:
        from functions.shared.adapters.batch import BatchPoolsAdapter

        return BatchPoolsAdapter()

    @cached_property
    def fleet(self) -> Fleet:
        from functions.shared.adapters.fleet import Ec2EcsFleet

        return Ec2EcsFleet()

    @cached_property
    def quotas(self) -> Quotas:
        from functions.shared.adapters.quotas import ServiceQuotas

        return ServiceQuotas()

    @cached_property
    def catalog(self) -> Catalog:
        # Cached per process with its ports: the catalog's cache lives across invocations.
        from functions.shared.adapters.ec2 import Ec2Catalog

        return Ec2Catalog()

    @cached_property
    def spot_market(self) -> Ec2SpotMarket:
        """Shared by availability and prices: one spot price history per process."""
        from functions.shared.adapters.spot import Ec2SpotMarket

        return Ec2SpotMarket(self.settings.region)

    @cached_property
    def availability(self) -> Availability:
        from functions.shared.adapters.ec2 import Ec2Availability

        return Ec2Availability(self.settings.subnets, self.spot_market)

    @cached_property
    def prices(self) -> Prices:
        from functions.shared.adapters.prices import MarketPrices

        return MarketPrices(self.settings.region, self.settings.table_name, self.spot_market)

    @cached_property
    def workflow(self) -> Workflow:
        from functions.shared.adapters.stepfunctions import StepFunctionsWorkflow

        return StepFunctionsWorkflow(self.settings.state_machine_arn)

    @cached_property
    def sweeps(self) -> Sweeps:
        from functions.shared.adapters.sweeps import LambdaSweeps

        return LambdaSweeps(self.settings.sweep_function_name)

    @cached_property
    def reservations(self) -> Reservations:
        from functions.shared.adapters.reservations import Ec2Reservations

        return Ec2Reservations()

    @cached_property
    def listed_offerings(self) -> ListedOfferings:
        from functions.shared.adapters.offering_store import DynamoListedOfferings

        return DynamoListedOfferings(self.settings.table_name)

    @cached_property
    def metrics(self) -> Metrics:
        from functions.shared.adapters.metrics import PowertoolsMetrics

        return PowertoolsMetrics()

    @cached_property
    def logs(self) -> JobLogs:
        from functions.shared.adapters.logs import CloudWatchJobLogs

        return CloudWatchJobLogs()


def reset_ports() -> None:
    _ports.cache_clear()
