"""Cost of an attempt and the bundled on-demand price snapshot."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from functions.shared.adapters.prices import (
    SnapshotPrices,
    price_snapshot,
    publication_day,
    snapshot_day,
    snapshot_regions,
)
from functions.shared.domain.core.money import PriceQuote
from functions.shared.domain.cost.attempts import attempt_cost, gpu_share

on_demand_price = SnapshotPrices().on_demand

QUOTE = PriceQuote(hourly_usd=1.2, pricing="unit-test prices")


def _bundled_snapshot() -> dict:
    return json.loads(resources.files("functions.shared.data").joinpath("prices", "us-east-1.json").read_text())


def test_attempt_cost_is_hourly_price_times_runtime_hours_times_gpu_share():
    # Given $1.20/h, 30 minutes, and 1 of the instance's 4 GPUs
    # When costing the attempt
    cost = attempt_cost(QUOTE, runtime_seconds=1800, job_gpus=1, instance_gpus=4)

    # Then it costs 1.2 x 0.5 h x 0.25 = $0.15
    assert cost.usd == pytest.approx(0.15)
    assert (cost.hourly_usd, cost.runtime_seconds, cost.gpu_share) == (1.2, 1800, 0.25)


def test_attempt_cost_says_where_its_price_came_from():
    # Given / When: any attempt
    cost = attempt_cost(QUOTE, runtime_seconds=60, job_gpus=1, instance_gpus=1)

    # Then the cost carries the quote's pricing label
    assert cost.pricing == "unit-test prices"


def test_a_one_second_attempt_still_costs_its_fraction_of_a_cent():
    # Given one second on a $1.006/h instance
    # When costing
    cost = attempt_cost(PriceQuote(hourly_usd=1.006, pricing="x"), runtime_seconds=1, job_gpus=1, instance_gpus=1)

    # Then the cost is 1.006 / 3600 dollars, not rounded away
    assert cost.usd == pytest.approx(1.006 / 3600, rel=1e-3)


def test_gpu_share_is_capped_at_the_whole_instance():
    # Given a job holding more GPUs than the instance reports
    # When costing one hour at $1.20/h
    cost = attempt_cost(QUOTE, runtime_seconds=3600, job_gpus=8, instance_gpus=4)

    # Then the share is 1 and the job pays the full hourly price, no more
    assert cost.gpu_share == 1.0
    assert cost.usd == pytest.approx(1.2)


def test_gpu_share_of_an_instance_without_gpu_count_is_the_whole_instance():
    # Given / When / Then: an unknown (0) GPU count charges the whole instance
    assert gpu_share(1, 0) == 1.0


def test_negative_runtime_costs_nothing():
    # Given a stop time before the start time (clock skew)
    # When costing
    cost = attempt_cost(QUOTE, runtime_seconds=-30, job_gpus=1, instance_gpus=1)

    # Then runtime and cost are zero
    assert (cost.runtime_seconds, cost.usd) == (0.0, 0.0)


def test_on_demand_price_of_a_known_type_comes_from_the_bundled_snapshot():
    # Given the bundled snapshot
    snapshot = _bundled_snapshot()

    # When asking for g5.xlarge
    quote = on_demand_price("g5.xlarge")

    # Then the quote is the snapshot's hourly price
    assert quote is not None
    assert quote.hourly_usd == float(snapshot["prices"]["g5.xlarge"])
    assert quote.hourly_usd > 0


def test_on_demand_price_label_names_the_region_and_snapshot_date():
    # Given the bundled snapshot's region and date
    snapshot = _bundled_snapshot()

    # When asking for a known type
    quote = on_demand_price("g5.xlarge")

    # Then the label says which snapshot the price is from
    assert quote is not None
    assert quote.pricing == f"on-demand {snapshot['region']} price snapshot of {snapshot['as_of']}"
    assert snapshot["as_of"] in quote.pricing


def test_on_demand_price_of_an_unknown_type_is_none():
    # Given / When / Then
    assert on_demand_price("x99.huge") is None


# -- the share of the instance a job holds, and exact sums -----------------------------------------
def test_the_share_is_the_largest_of_the_gpu_vcpu_and_memory_fractions():
    from functions.shared.domain.cost.attempts import instance_share

    # One GPU of eight, but all 192 vCPUs of a g6.48xlarge: it held the whole instance
    assert instance_share({"gpus": 1, "vcpus": 192, "memory": 64}, {"gpus": 8, "vcpus": 192, "memory": 768}) == (
        1.0,
        "vcpus",
    )
    # Memory-heavy: half the memory of a 4-GPU instance with one GPU
    assert instance_share({"gpus": 1, "vcpus": 4, "memory": 96}, {"gpus": 4, "vcpus": 48, "memory": 192}) == (
        0.5,
        "memory",
    )
    # A GPU-only job: its GPU fraction
    assert instance_share({"gpus": 1, "vcpus": 12, "memory": 43.2}, {"gpus": 4, "vcpus": 48, "memory": 192}) == (
        0.25,
        "gpus",
    )


def test_a_total_is_the_exact_sum_of_its_parts():
    from functions.shared.domain.core.money import usd_sum
    from functions.shared.domain.cost.attempts import Cost, total_cost

    parts = [0.1, 0.2, 0.3]
    assert usd_sum(parts) == 0.6 != sum(parts)  # float addition gives 0.6000000000000001
    costs = [Cost(usd=u, hourly_usd=1, runtime_seconds=1, gpu_share=1, pricing="p") for u in parts]
    total = total_cost(costs)
    assert total is not None and total.usd == 0.6 and total.pricing.startswith("3 attempts")


def test_an_attempt_cost_is_computed_in_decimals():
    cost = attempt_cost(PriceQuote(hourly_usd=0.526, pricing="x"), runtime_seconds=10, share=(0.25, "gpus"))
    assert cost.usd == 0.000365277778  # 0.526 x 10 / 3600 x 0.25, to a millionth of a cent
    assert (cost.gpu_share, cost.share_by) == (0.25, "gpus")


def test_a_spot_price_is_averaged_over_the_attempt_each_point_in_effect_until_the_next():
    from functions.shared.domain.core.money import time_weighted

    start, stop = "2026-11-23T10:00:00.000Z", "2026-11-23T11:00:00.000Z"
    points = [
        ("2026-11-23T09:40:00.000Z", 0.30),  # in effect when the attempt started
        ("2026-11-23T10:30:00.000Z", 0.50),  # from half past
        ("2026-11-23T11:10:00.000Z", 9.00),  # after it ended: no weight
    ]
    assert time_weighted(points, start, stop) == 0.4
    # Without a point before the start, the first one inside is taken as in effect from the start
    assert time_weighted(points[1:], start, stop) == 0.5
    assert time_weighted([], start, stop) is None


def test_a_job_that_never_started_has_no_runtime_even_if_its_start_reads_zero():
    from functions.shared.domain.fleet.batch import BatchJobState

    # Given a job cancelled while RUNNABLE, described with startedAt 0 (never started) and a stoppedAt
    never = BatchJobState.from_batch(
        {"jobId": "j", "status": "FAILED", "startedAt": 0, "stoppedAt": 1_763_900_000_000,
         "attempts": [{"startedAt": 0, "stoppedAt": 1_763_900_000_000}]}
    )  # fmt: skip
    # Then it ran for no time at all (not since 1970), and has no start time
    assert (never.runtime_seconds, never.started_at) == (None, None)


def test_each_bundled_price_snapshot_is_named_by_its_region_dated_and_sourced():
    regions = snapshot_regions()
    assert "us-east-1" in regions
    for region in regions:
        snapshot = price_snapshot(region)
        assert snapshot is not None and snapshot["region"] == region, region
        assert snapshot["as_of"] and region in snapshot["source"] and snapshot["prices"], region


@pytest.mark.parametrize("region", ["us-east-1", "eu-west-1"])
def test_a_region_is_priced_from_its_own_snapshot_and_never_from_another(region):
    quote = SnapshotPrices(region).on_demand("g5.xlarge")
    snapshot = price_snapshot(region)
    if snapshot is None:
        assert quote is None
    else:
        assert quote is not None and quote.hourly_usd == snapshot["prices"]["g5.xlarge"]
        assert quote.pricing.startswith(f"on-demand {region} ")


@pytest.mark.parametrize("region", ["../prices/us-east-1", "us-east-1.json", "", "mars-north-1x"])
def test_a_region_that_is_not_a_region_name_has_no_snapshot(region):
    assert price_snapshot(region) is None
    assert SnapshotPrices(region).on_demand("g5.xlarge") is None


def test_every_main_gpu_region_has_a_bundled_snapshot_of_positive_gpu_prices():
    from gpupilot.snapshots import MAIN_GPU_REGIONS

    # Given the regions `make prices` snapshots
    assert set(MAIN_GPU_REGIONS) <= set(snapshot_regions())
    for region in MAIN_GPU_REGIONS:
        prices = price_snapshot(region)["prices"]  # type: ignore[index]
        # Then each prices GPU types only (g and p families), each with a positive hourly price
        assert prices and all(t[0] in "gp" and isinstance(v, float) and v > 0 for t, v in prices.items()), region


def test_a_price_list_item_is_dated_by_the_day_of_its_publication_date_and_never_by_a_cut_of_it():
    # Given publication dates as the Price List writes them, and one that is not a time at all
    # When / Then the day of each, and none for the one that is not a date (its prices are then dated by the read)
    assert publication_day("2025-08-14T21:02:33Z") == "2025-08-14"
    assert publication_day("2026-01-19T00:00:00+00:00") == "2026-01-19"
    assert publication_day("2025-08T00:00:00Z") is None


def test_a_snapshot_dated_by_its_month_is_of_the_first_day_of_it_at_the_earliest():
    assert (snapshot_day("2025-08"), snapshot_day("2026-01-19")) == ("2025-08-01", "2026-01-19")
