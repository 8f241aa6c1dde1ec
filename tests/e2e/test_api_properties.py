"""Property-based API tests: schemathesis generates requests from the OpenAPI document (the local cloud's
variant: the same routes and models, no SigV4) and runs every one of its checks, plus ours
(api_properties/hooks.py), against the local cloud. The fast profile runs here; `make bench` runs a longer one
(bench/api_properties.py). Fixed seed: a failure reproduces."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gpupilot.openapi import render
from tests.e2e.api_properties.runner import FAST, run_schemathesis
from tests.e2e.conftest import RunningCloud

pytestmark = pytest.mark.e2e


def test_generated_requests_meet_every_check_of_the_openapi_contract(
    cloud_factory: Callable[..., RunningCloud], tmp_path: Path
) -> None:
    cloud = cloud_factory({"jobs": {"runtime_seconds": 1}})
    document = tmp_path / "openapi.local.json"
    document.write_text(render(local=True))
    outcome = run_schemathesis(cloud.api_url, document, FAST)
    assert outcome.returncode == 0 and outcome.failures == 0, outcome.output[-6000:]
    assert outcome.generated > 100, outcome.output[-2000:]
