"""Ports: what the use cases need from the world, as Protocols, one module per capability (jobs, capacity,
reservations, pools, hosts, cost, health, teams, metrics); `Ports` gathers them.

The adapters (functions/shared/adapters) implement them with boto3; the tests' fakes (tests/fakes)
implement them in memory. Use cases see only these. A port module imports the domain for annotations only, and no
other port module but hosts (the host actions and notes that the pools' and the jobs' ports extend).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from functions.shared.ports.capacity import Availability, Catalog, OfferingMemory, Prices, Quotas
from functions.shared.ports.cost import WasteLedger
from functions.shared.ports.health import HealthStore, Sweeps
from functions.shared.ports.hosts import HostLedger
from functions.shared.ports.jobs import BatchJobs, JobLogs, JobStore, Workflow
from functions.shared.ports.metrics import Metrics
from functions.shared.ports.pools import BatchPools, Fleet, PoolStates
from functions.shared.ports.reservations import ListedOfferings, Reservations
from functions.shared.ports.teams import AuditLog, Budgets, GpuCaps

if TYPE_CHECKING:  # annotations only: a handler imports the domain modules it uses, not all of them
    from functions.shared.domain.core.settings import Settings


@dataclass(frozen=True)
class Ports:
    """Everything the use cases reach the world through; a handler builds it once per process."""

    settings: Settings
    jobs: JobStore
    offerings: OfferingMemory
    health: HealthStore
    pool_states: PoolStates
    waste: WasteLedger
    hosts: HostLedger
    batch: BatchJobs
    pools: BatchPools
    fleet: Fleet
    quotas: Quotas
    catalog: Catalog
    availability: Availability
    prices: Prices
    workflow: Workflow
    sweeps: Sweeps
    metrics: Metrics
    reservations: Reservations
    listed_offerings: ListedOfferings
    logs: JobLogs
    budgets: Budgets
    audit: AuditLog
    caps: GpuCaps
    # The ports of the other capacity regions (tests' fakes; the live ones are made on first use).
    regional: Mapping[str, Ports] = field(default_factory=dict)

    def in_region(self, region: str | None) -> Ports:
        """The ports acting in capacity region `region` (its Batch, EC2, ECS, quotas, prices, pools' memory); the
        job records, the memory of offerings, the workflow and the reports stay the home region's. None: home."""
        if region is None or region == self.settings.region:
            return self
        return self.regional[region]  # KeyError: not a capacity region of the deployment
