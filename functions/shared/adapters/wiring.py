"""The composition root: the real adapters behind the ports, built once per process (per environment).

Each adapter is imported and built on the port's first use, so a handler's cold start loads only the
adapters (and the domain models they bring) that its use case reaches.
"""

from __future__ import annotations

import threading
from functools import cache, cached_property
from typing import TYPE_CHECKING

from functions.shared.adapters.config import settings
from functions.shared.domain.core.settings import Settings
from functions.shared.ports import Ports

if TYPE_CHECKING:
    from functions.shared.adapters.spot import Ec2SpotMarket
    from functions.shared.ports import Fleet, HealthStore, HostLedger, JobLogs, OfferingMemory, WasteLedger
    from functions.shared.ports.capacity import Availability, Catalog, Prices, Quotas
    from functions.shared.ports.health import Sweeps
    from functions.shared.ports.jobs import BatchJobs, JobStore, Workflow
    from functions.shared.ports.metrics import Metrics
    from functions.shared.ports.pools import BatchPools, PoolStates
    from functions.shared.ports.reservations import ListedOfferings, Reservations
    from functions.shared.ports.teams import AuditLog, Budgets, GpuCaps


def live_ports() -> Ports:
    """Ports over AWS for the calling function's settings; adapters make their clients on first use."""
    return _ports(settings().model_dump_json())


@cache
def _ports(config_json: str) -> Ports:
    return LivePorts(Settings.model_validate_json(config_json))


class LivePorts(Ports):
    """Ports whose adapters are imported and built on first use (each once: cached_property).

    A capacity region's ports (`in_region`) have adapters of their own for what is regional (Batch, EC2, ECS,
    quotas, prices, its pools' memory), and share the home region's for the rest: its table and workflow."""

    _home: LivePorts | None
    _views: dict[str, LivePorts]
    _views_lock: threading.Lock

    def __init__(self, settings: Settings, home: LivePorts | None = None) -> None:
        # The dataclass is frozen: set its stored fields.
        object.__setattr__(self, "settings", settings)
        object.__setattr__(self, "regional", {})
        object.__setattr__(self, "_home", home)
        object.__setattr__(self, "_views", {})
        object.__setattr__(self, "_views_lock", threading.Lock())

    def in_region(self, region: str | None) -> Ports:
        home = self._home or self
        if region is None or region == self.settings.region:
            return self
        if region == home.settings.region:
            return home
        if self._home is not None:
            return home.in_region(region)
        if region not in self.settings.regions:
            raise KeyError(f"{region} is not a capacity region of this deployment ({', '.join(self.settings.regions)})")
        with self._views_lock:
            view = self._views.get(region)
            if view is None:
                view = self._views[region] = LivePorts(self._regional_settings(region), home=self)
            return view

    def _regional_settings(self, region: str) -> Settings:
        """This function's settings in `region`: with that region's network when the function builds pools."""
        network = None
        if self.settings.region_parameter:
            from functions.shared.adapters.regions import region_network

            network = region_network(region, self.settings.region_parameter)
        return self.settings.in_region(region, network)

    @property
    def _region(self) -> str | None:
        """The region of this one's regional clients: None, the process's own (home)."""
        return self.settings.region if self._home is not None else None

    @cached_property
    def jobs(self) -> JobStore:
        if self._home is not None:
            return self._home.jobs
        from functions.shared.adapters.job_store import DynamoJobStore

        return DynamoJobStore(self.settings.table_name)

    @cached_property
    def offerings(self) -> OfferingMemory:
        if self._home is not None:
            return self._home.offerings
        from functions.shared.adapters.table_store import DynamoOfferingMemory

        return DynamoOfferingMemory(self.settings.table_name)

    @cached_property
    def health(self) -> HealthStore:
        if self._home is not None:
            return self._home.health
        from functions.shared.adapters.table_store import DynamoHealthStore

        return DynamoHealthStore(self.settings.table_name)

    @cached_property
    def pool_states(self) -> PoolStates:
        from functions.shared.adapters.pool_store import DynamoPoolStates

        return DynamoPoolStates(self.settings.table_name, region=self.settings.region if self._home else None)

    @cached_property
    def waste(self) -> WasteLedger:
        if self._home is not None:
            return self._home.waste
        from functions.shared.adapters.table_store import DynamoWasteLedger

        return DynamoWasteLedger(self.settings.table_name)

    @cached_property
    def hosts(self) -> HostLedger:
        if self._home is not None:
            return self._home.hosts
        from functions.shared.adapters.host_store import DynamoHostLedger

        return DynamoHostLedger(self.settings.table_name)

    @cached_property
    def batch(self) -> BatchJobs:
        from functions.shared.adapters.batch import BatchJobsAdapter

        return BatchJobsAdapter(region=self._region)

    @cached_property
    def pools(self) -> BatchPools:
        from functions.shared.adapters.batch import BatchPoolsAdapter

        return BatchPoolsAdapter(region=self._region)

    @cached_property
    def fleet(self) -> Fleet:
        from functions.shared.adapters.fleet import Ec2EcsFleet

        return Ec2EcsFleet(region=self._region)

    @cached_property
    def quotas(self) -> Quotas:
        from functions.shared.adapters.quotas import ServiceQuotas

        return ServiceQuotas(region=self._region)

    @cached_property
    def catalog(self) -> Catalog:
        # Cached per process with its ports: the catalog's cache lives across invocations. Each region sells its own.
        from functions.shared.adapters.ec2 import Ec2Catalog

        return Ec2Catalog(region=self._region)

    @cached_property
    def spot_market(self) -> Ec2SpotMarket:
        """Shared by availability and prices: one spot price history per process."""
        from functions.shared.adapters.spot import Ec2SpotMarket

        return Ec2SpotMarket(self.settings.region)

    @cached_property
    def availability(self) -> Availability:
        from functions.shared.adapters.ec2 import Ec2Availability

        return Ec2Availability(self.settings.subnets, self.spot_market, region=self._region)

    @cached_property
    def prices(self) -> Prices:
        from functions.shared.adapters.prices import MarketPrices

        return MarketPrices(self.settings.region, self.settings.table_name, self.spot_market)

    @cached_property
    def workflow(self) -> Workflow:
        if self._home is not None:
            return self._home.workflow
        from functions.shared.adapters.stepfunctions import StepFunctionsWorkflow

        return StepFunctionsWorkflow(self.settings.state_machine_arn)

    @cached_property
    def sweeps(self) -> Sweeps:
        if self._home is not None:
            return self._home.sweeps
        from functions.shared.adapters.sweeps import LambdaSweeps

        return LambdaSweeps(self.settings.sweep_function_name)

    @cached_property
    def reservations(self) -> Reservations:
        from functions.shared.adapters.reservations import Ec2Reservations

        # Reservations are EC2's, in the region they are held in.
        return Ec2Reservations(region=self._region)

    @cached_property
    def listed_offerings(self) -> ListedOfferings:
        if self._home is not None:
            return self._home.listed_offerings
        from functions.shared.adapters.offering_store import DynamoListedOfferings

        return DynamoListedOfferings(self.settings.table_name)

    @cached_property
    def metrics(self) -> Metrics:
        if self._home is not None:
            return self._home.metrics
        from functions.shared.adapters.metrics import PowertoolsMetrics

        return PowertoolsMetrics()

    @cached_property
    def budgets(self) -> Budgets:
        if self._home is not None:
            return self._home.budgets
        from functions.shared.adapters.budget_store import DynamoBudgets

        return DynamoBudgets(self.settings.table_name)

    @cached_property
    def audit(self) -> AuditLog:
        if self._home is not None:
            return self._home.audit
        from functions.shared.adapters.audit_store import DynamoAuditLog

        return DynamoAuditLog(self.settings.table_name)

    @cached_property
    def caps(self) -> GpuCaps:
        # Each region's Batch holds the teams' caps of that region.
        from functions.shared.adapters.caps import BatchGpuCaps

        return BatchGpuCaps(region=self._region)

    @cached_property
    def logs(self) -> JobLogs:
        from functions.shared.adapters.logs import CloudWatchJobLogs

        # Batch's awslogs driver writes in the region the job runs in.
        return CloudWatchJobLogs(region=self._region)


def reset_ports() -> None:
    _ports.cache_clear()
