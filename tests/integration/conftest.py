"""Integration layer: the handlers and adapters making real boto3 calls against moto, the stack's resources
deployed from its synthesized template, each function run with the environment the template gives it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from moto import mock_aws

from functions.shared.adapters.clients import observe_calls, reset_clients, stop_observing
from functions.shared.adapters.wiring import reset_ports
from gpupilot.localcloud.deploy import ACCOUNT_ID, Deployment, deploy
from gpupilot.localcloud.dispatch import HandlerDispatcher
from gpupilot.localcloud.iam import IamEnforcer, enforcer_for
from gpupilot.localcloud.moto_adaptations import ComputeEnvironmentLifecycle, SpotMarket, adapted_moto
from gpupilot.localcloud.template import load_template

MOTO_CONFIG: Any = {
    "batch": {"use_docker": False},
    "lambda": {"use_docker": False},
    "stepfunctions": {"execute_state_machine": False},
}
ZONES = ["us-east-1a", "us-east-1b"]
CREATE_SECONDS = 60.0
# Batch deletes a queue or a compute environment in about as long, then shows it DELETED for a while.
DELETE_SECONDS = 60.0
DELETED_SECONDS = 600.0


class ManualClock:
    """A clock the test moves: a new compute environment stays CREATING until the test advances it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float = CREATE_SECONDS) -> None:
        self.now += seconds


@dataclass
class Cloud:
    """moto with the stack deployed; `invoke` runs a function's handler as Lambda would."""

    deployment: Deployment
    clock: ManualClock
    lifecycle: ComputeEnvironmentLifecycle
    dispatcher: HandlerDispatcher
    metrics: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)

    def invoke(self, key: str, event: Any) -> Any:
        """The handler's result; an error is raised, as the Lambda runtime would report it."""
        result, errored = self.dispatcher.invoke(key, event)
        if errored:
            raise HandlerError(result["errorType"], result["errorMessage"])
        return result

    def metric(self, name: str) -> list[float]:
        return [d["Value"] for _, data in self.metrics for d in data if d["MetricName"] == name]


class HandlerError(Exception):
    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(f"{error_type}: {message}")
        self.error_type = error_type


@pytest.fixture(scope="session")
def template() -> dict[str, Any]:
    return load_template()


@pytest.fixture
def cloud(template: dict[str, Any]) -> Iterator[Cloud]:
    clock = ManualClock()
    captured: list[tuple[str, list[dict[str, Any]]]] = []
    dispatcher = HandlerDispatcher(metric_sink=lambda namespace, data: captured.append((namespace, data)))
    lifecycle = ComputeEnvironmentLifecycle(
        create_seconds=CREATE_SECONDS, clock=clock, delete_seconds=DELETE_SECONDS, deleted_seconds=DELETED_SECONDS
    )
    spot_market = SpotMarket(offered=lambda instance_type: list(ZONES))
    with (
        mock_aws(config=MOTO_CONFIG),
        adapted_moto(dispatcher=dispatcher, lifecycle=lifecycle, spot_market=spot_market),
    ):
        deployed = deploy(boto3.session.Session(), template, ZONES)
        dispatcher.functions = dict(deployed.functions)
        enforcer = enforcer_for(
            deployed.policies,
            deployed.instance_profile_roles,
            "us-east-1",
            ACCOUNT_ID,
            IamEnforcer.log_dir_from_environment(),
        )
        observe_calls(enforcer)
        reset_clients()
        reset_ports()
        yield Cloud(deployment=deployed, clock=clock, lifecycle=lifecycle, dispatcher=dispatcher, metrics=captured)
        stop_observing(enforcer)
        reset_clients()
        reset_ports()


@pytest.fixture
def deployment(cloud: Cloud) -> Deployment:
    return cloud.deployment
