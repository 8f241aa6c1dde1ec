"""The composition root builds each adapter on its port's first use: a handler loads only what it reaches."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator

import pytest

from functions.shared.adapters.job_store import DynamoJobStore
from functions.shared.adapters.prices import MarketPrices
from functions.shared.adapters.wiring import LivePorts, live_ports, reset_ports
from tests.unit.fresh_interpreter import answer_of

_CHILD = textwrap.dedent(
    """
    import json, sys
    import functions.job_events.handler
    from functions.shared.adapters.wiring import live_ports
    at_import = sorted(m for m in sys.modules if m.startswith("functions.shared.adapters."))
    live_ports().jobs
    after_jobs = sorted(m for m in sys.modules if m.startswith("functions.shared.adapters."))
    print(json.dumps({"at_import": at_import, "after_jobs": after_jobs}))
    """
)


@pytest.fixture
def ports(monkeypatch: pytest.MonkeyPatch) -> Iterator[LivePorts]:
    monkeypatch.setenv("AWS_REGION", "eu-north-1")
    monkeypatch.setenv("GPUPILOT_TABLE", "jobs-table")
    reset_ports()
    built = live_ports()
    assert isinstance(built, LivePorts)
    yield built
    reset_ports()


def test_a_handler_imports_only_the_adapters_its_ports_reach():
    loaded = answer_of(_CHILD)
    assert "functions.shared.adapters.job_store" not in loaded["at_import"]
    assert "functions.shared.adapters.job_store" in loaded["after_jobs"]
    # Nothing the job store does not need: no EC2, Batch, prices or Step Functions adapter.
    for unused in ("ec2", "batch", "prices", "stepfunctions", "fleet", "quotas", "spot"):
        assert f"functions.shared.adapters.{unused}" not in loaded["after_jobs"]


def test_each_port_is_built_once_from_the_functions_settings(ports: LivePorts):
    assert (ports.settings.region, ports.settings.table_name) == ("eu-north-1", "jobs-table")
    assert isinstance(ports.jobs, DynamoJobStore)
    assert ports.jobs is ports.jobs
    assert live_ports() is ports  # one set of ports per process and settings
    assert isinstance(ports.prices, MarketPrices)


def test_availability_and_prices_share_one_spot_market(ports: LivePorts):
    market = ports.spot_market
    assert vars(ports.availability)["_spot"] is market
    assert vars(ports.prices)["_spot"] is market


def test_a_capacity_regions_ports_call_that_region_and_share_the_home_stores(monkeypatch: pytest.MonkeyPatch):
    # Given a function of a deployment whose capacity regions are eu-north-1 (home) and us-west-2
    monkeypatch.setenv("AWS_REGION", "eu-north-1")
    monkeypatch.setenv("GPUPILOT_TABLE", "jobs-table")
    monkeypatch.setenv("GPUPILOT_CAPACITY_REGIONS", "us-west-2")
    reset_ports()
    try:
        home = live_ports()
        # When it acts in us-west-2
        west = home.in_region("us-west-2")
        # Then its regional clients are us-west-2's, its stores and workflow home's, and home is home
        assert (west.settings.region, west.settings.home) == ("us-west-2", "eu-north-1")
        assert west.batch._aws.meta.region_name == "us-west-2"  # type: ignore[attr-defined]
        assert west.quotas._aws.meta.region_name == "us-west-2"  # type: ignore[attr-defined]
        assert west.jobs is home.jobs and west.offerings is home.offerings and west.workflow is home.workflow
        assert west.hosts is home.hosts
        assert west.in_region("eu-north-1") is home and home.in_region(None) is home
        # And a region the deployment has none in is refused
        with pytest.raises(KeyError, match="ap-south-1 is not a capacity region"):
            home.in_region("ap-south-1")
    finally:
        reset_ports()
