"""Every test runs with fake AWS credentials and no endpoint override: nothing can reach a real account."""

from __future__ import annotations

import os

import pytest

pytest_plugins = ["tests.iam_drift"]

SAFE_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
    "POWERTOOLS_SERVICE_NAME": "gpupilot",
    "POWERTOOLS_METRICS_NAMESPACE": "GpuPilot",
}


@pytest.fixture(autouse=True)
def _safe_aws_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "GPUPILOT_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in SAFE_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    assert os.environ["AWS_ACCESS_KEY_ID"] == "testing"
