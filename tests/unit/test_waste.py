"""Waste: what instances cost without serving a job, per instance and reason, restated by each sweep."""

from __future__ import annotations

from functions.shared.domain.core.money import PriceQuote
from functions.shared.domain.cost.waste import IDLE, NEVER_REGISTERED, waste_of
from functions.shared.domain.fleet.analysis import FleetAnalysis, InstanceEvidence
from functions.shared.domain.fleet.batch import Ec2InstanceState, FleetState

AT = "2026-11-23T10:00:00.000Z"
QUOTE = {"g5.xlarge": PriceQuote(hourly_usd=1.0, pricing="test")}


def instance(instance_id: str, launched_at: str) -> Ec2InstanceState:
    return Ec2InstanceState(instance_id=instance_id, instance_type="g5.xlarge", state="running",
                            launched_at=launched_at, zone="us-east-1a")  # fmt: skip


def test_an_instance_that_never_registered_wasted_its_whole_life_at_its_price():
    fleet = FleetState(instances=[instance("i-1", "2026-11-23T09:30:00.000Z")])
    analysis = FleetAnalysis(
        unregistered=[InstanceEvidence(instance_id="i-1", instance_type="g5.xlarge", age_seconds=1800)]
    )
    [entry] = waste_of("pool", fleet, analysis, None, AT, QUOTE)
    assert (entry.reason, entry.seconds, entry.usd, entry.day) == (NEVER_REGISTERED, 1800, 0.5, "2026-11-23")


def test_instances_of_an_idle_pool_waste_from_when_it_went_idle_and_unpriced_types_are_left_out():
    fleet = FleetState(
        instances=[instance("i-1", "2026-11-23T08:00:00.000Z"), instance("i-2", "2026-11-23T09:55:00.000Z")]
    )
    entries = waste_of("pool", fleet, FleetAnalysis(), "2026-11-23T09:45:00.000Z", AT, QUOTE)
    assert [(e.instance_id, e.reason, e.seconds) for e in entries] == [("i-1", IDLE, 900), ("i-2", IDLE, 300)]
    assert waste_of("pool", fleet, FleetAnalysis(), "2026-11-23T09:45:00.000Z", AT, {}) == []
