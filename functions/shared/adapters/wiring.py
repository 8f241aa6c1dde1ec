"""The composition root: the real adapters behind the ports, built once per process (per environment)."""

from __future__ import annotations

from functools import cache

from functions.shared.adapters.batch import BatchJobsAdapter, BatchPoolsAdapter
from functions.shared.adapters.config import settings
from functions.shared.adapters.ec2 import Ec2Availability, Ec2Catalog
from functions.shared.adapters.fleet import Ec2EcsFleet
from functions.shared.adapters.job_store import DynamoJobStore
from functions.shared.adapters.metrics import PowertoolsMetrics
from functions.shared.adapters.pool_store import DynamoPoolStates
from functions.shared.adapters.prices import MarketPrices
from functions.shared.adapters.quotas import ServiceQuotas
from functions.shared.adapters.spot import Ec2SpotMarket
from functions.shared.adapters.stepfunctions import StepFunctionsWorkflow
from functions.shared.adapters.sweeps import LambdaSweeps
from functions.shared.adapters.table_store import (
    DynamoHealthStore,
    DynamoOfferingMemory,
    DynamoWasteLedger,
)
from functions.shared.domain.settings import Settings
from functions.shared.ports import Ports


def live_ports() -> Ports:
    """Ports over AWS for the calling function's settings; adapters make their clients on first use."""
    return _ports(settings().model_dump_json())


@cache
def _ports(config_json: str) -> Ports:
    config = Settings.model_validate_json(config_json)
    spot_market = Ec2SpotMarket(config.region)
    return Ports(
        settings=config,
        jobs=DynamoJobStore(config.table_name),
        offerings=DynamoOfferingMemory(config.table_name),
        health=DynamoHealthStore(config.table_name),
        pool_states=DynamoPoolStates(config.table_name),
        waste=DynamoWasteLedger(config.table_name),
        batch=BatchJobsAdapter(),
        pools=BatchPoolsAdapter(),
        fleet=Ec2EcsFleet(),
        quotas=ServiceQuotas(),
        # The catalog is cached per process: one per settings keeps its cache alive across invocations.
        catalog=Ec2Catalog(),
        availability=Ec2Availability(config.subnets, spot_market),
        prices=MarketPrices(config.region, config.table_name, spot_market),
        workflow=StepFunctionsWorkflow(config.state_machine_arn),
        sweeps=LambdaSweeps(config.sweep_function_name),
        metrics=PowertoolsMetrics(),
    )


def reset_ports() -> None:
    _ports.cache_clear()
