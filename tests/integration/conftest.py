"""Integration layer: real boto3 calls against moto, with the stack's resources deployed from its template."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from functions.shared.clients import reset_clients
from gpupilot.localcloud.deploy import Deployment, deploy, load_template

MOTO_CONFIG: Any = {
    "batch": {"use_docker": False},
    "lambda": {"use_docker": False},
    "stepfunctions": {"execute_state_machine": False},
}
ZONES = ["us-east-1a", "us-east-1b"]


@pytest.fixture(scope="session")
def template() -> dict[str, Any]:
    return load_template()


@pytest.fixture
def deployment(template: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Iterator[Deployment]:
    """The stack's resources in a fresh moto account, and the handlers' environment pointing at them."""
    with mock_aws(config=MOTO_CONFIG):
        deployed = deploy(boto3.session.Session(), template, ZONES)
        for name, value in deployed.environment().items():
            monkeypatch.setenv(name, value)
        reset_clients()
        yield deployed
        reset_clients()


class LambdaContext:
    function_name = "test"
    memory_limit_in_mb = 512
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:test"
    aws_request_id = "request-1"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


@pytest.fixture
def context() -> LambdaContext:
    return LambdaContext()
