"""Every test runs with fake AWS credentials and no endpoint override: nothing can reach a real account."""

from __future__ import annotations

import os
from collections.abc import Iterator

import botocore.loaders
import botocore.session
import pytest

pytest_plugins = ["tests.iam_drift", "tests.scheduling"]

SAFE_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "POWERTOOLS_SERVICE_NAME": "gpupilot",
    "POWERTOOLS_METRICS_NAMESPACE": "GpuPilot",
}


@pytest.fixture(scope="session", autouse=True)
def _one_botocore_loader() -> Iterator[None]:
    """Every botocore session of the test process shares one data loader (per data path).

    Each integration test deploys into a fresh moto with new sessions, and each new session would parse the
    service models' JSON again (about half of a deployment's time). The loader only reads botocore's
    read-only data files, and botocore already shares a loaded model between the clients of one session.
    """
    original = botocore.session.create_loader
    loaders: dict[str | None, botocore.loaders.Loader] = {}

    def create_loader(search_path_string: str | None = None) -> botocore.loaders.Loader:
        if search_path_string not in loaders:
            loaders[search_path_string] = original(search_path_string)
        return loaders[search_path_string]

    botocore.session.create_loader = create_loader
    yield
    botocore.session.create_loader = original


@pytest.fixture(autouse=True)
def _safe_aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "GPUPILOT_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in SAFE_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    assert os.environ["AWS_ACCESS_KEY_ID"] == "testing"
