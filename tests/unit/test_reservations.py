"""Reserved capacity in the plan, the price and the waste: a reservation with room ranks first at zero marginal price,
a Capacity Block only takes a job that fits before EC2 takes its instances back, an attempt is priced at the
reservation's rate, and its free instances' hours are reservation_idle waste."""

from __future__ import annotations

from typing import Any

from functions.shared.domain.capacity.planning import plan
from functions.shared.domain.core.money import PriceQuote
from functions.shared.domain.core.vocabulary import CapacityType
from functions.shared.domain.cost.attempts import attempt_cost, capacity_type
from functions.shared.domain.cost.waste import RESERVATION_IDLE, reservation_idle
from functions.shared.domain.reservations.reservation import (
    Reservation,
    fit_problem,
    hourly_rate,
    reservation_launch_data,
    reservation_of,
)
from tests.unit.builders import catalog, gpu_type, job_request, signals

NOW = "2026-11-24T09:00:00Z"
A10G = gpu_type("g5.xlarge", gpu_model="A10G", gpu_memory_gib=24.0, vcpus=4, memory_gib=16.0)
L4 = gpu_type("g6.xlarge", gpu_model="L4", gpu_memory_gib=24.0, vcpus=4, memory_gib=16.0)
PRICES = {"g5.xlarge": 1.006, "g6.xlarge": 0.805}


def reservation(**overrides: Any) -> Reservation:
    """An active, open ODCR of 4 g5.xlarge in us-east-1a, 3 free, ending the next day."""
    fields: dict[str, Any] = {
        "reservation_id": "cr-0123456789abcdef0",
        "instance_type": "g5.xlarge",
        "zone": "us-east-1a",
        "state": "active",
        "total": 4,
        "available": 3,
        "starts_at": "2026-11-24T00:00:00Z",
        "ends_at": "2026-11-25T11:30:00Z",
    }
    return Reservation(**(fields | overrides))


def block(**overrides: Any) -> Reservation:
    """A targeted Capacity Block of 2 g5.xlarge, active, ending at 11:30 UTC today (usable until 11:00)."""
    fields: dict[str, Any] = {
        "capacity_block": True,
        "match": "targeted",
        "total": 2,
        "available": 2,
        "starts_at": "2026-11-23T11:30:00Z",
        "ends_at": "2026-11-24T11:30:00Z",
        "upfront_usd": 96.0,
    }
    return reservation(**(fields | overrides))


def plan_with(held: list[Reservation], **request_fields: Any) -> Any:
    found = signals(catalog(A10G, L4), table=PRICES).model_copy(update={"reservations": held, "now": NOW})
    return plan(job_request(**request_fields), found)


def test_a_reservation_with_room_ranks_first_at_its_rate_and_zero_marginal_price_and_the_plan_says_so() -> None:
    # Given an open ODCR of g5.xlarge with 3 of 4 free, and g6.xlarge cheaper on-demand
    # When a job that fits both is planned
    result = plan_with([reservation()])

    # Then the reservation comes first at the on-demand rate the account pays for it, adding nothing to the bill,
    # named with its room and end
    first = result.candidates[0]
    assert (first.instance_type, first.reservation) == ("g5.xlarge", "cr-0123456789abcdef0")
    assert (first.hourly_usd, first.marginal_hourly_usd, first.capacity_type) == (1.006, 0.0, "reserved")
    assert "reserved: cr-0123456789abcdef0, 3 of 4 free until 2026-11-25 11:30 UTC" in first.why
    assert first.why.endswith("$1.006/h, paid whether used or not: adds $0/h to the bill")
    # And the on-demand offerings follow, cheapest first
    assert [(c.instance_type, c.reservation) for c in result.candidates[1:]] == [
        ("g6.xlarge", None),
        ("g5.xlarge", None),
    ]


def test_a_full_reservation_is_not_a_candidate() -> None:
    result = plan_with([reservation(available=0)])

    assert all(c.reservation is None for c in result.candidates)


def test_a_targeted_reservation_is_used_only_when_the_request_asks_for_reserved_capacity() -> None:
    held = [reservation(match="targeted")]

    assert all(c.reservation is None for c in plan_with(held).candidates)
    asked = plan_with(held, capacity="reserved")
    assert [c.reservation for c in asked.candidates] == ["cr-0123456789abcdef0"]


def test_a_job_too_long_for_a_capacity_blocks_remaining_time_is_not_placed_on_it_and_the_plan_says_why() -> None:
    # Given a block whose instances go at 11:00 UTC (its end less 30 min), two hours after now
    # When a job of 120 minutes names it
    result = plan_with([block()], reservation="cr-0123456789abcdef0", timeout_minutes=120)

    # Then it has no candidate, and the rejection names the field and the block's deadline
    assert result.candidates == []
    [rejected] = result.rejected
    assert rejected.field == "timeout_minutes"
    assert "timeout_minutes 120" in rejected.reason and "2026-11-24 11:00 UTC" in rejected.reason


def test_a_job_that_fits_before_a_blocks_end_is_placed_on_it() -> None:
    # 3 tries of 30 min, each with 10 min to start: the two hours left before 11:00
    result = plan_with([block()], reservation="cr-0123456789abcdef0", timeout_minutes=30)

    assert [c.reservation for c in result.candidates] == ["cr-0123456789abcdef0"]


def test_a_job_whose_one_try_fits_a_block_but_whose_retries_do_not_is_not_placed_on_it() -> None:
    # Given the two hours left before 11:00 / When a job of 60 minutes names the block (70 min once, 210 with Batch's
    # retries of a failed host)
    result = plan_with([block()], reservation="cr-0123456789abcdef0", timeout_minutes=60)

    # Then it is not placed on it, and the rejection counts the tries
    assert result.candidates == []
    [rejected] = result.rejected
    assert rejected.field == "timeout_minutes" and "each of the 3 tries Batch may make (210 min)" in rejected.reason


def test_the_block_fit_allows_for_ec2s_half_hour_and_an_instances_start() -> None:
    # 110 min + 10 min to start = 120 min: exactly the two hours left before 11:00
    assert fit_problem(block(), 110, 1, NOW) is None
    assert fit_problem(block(), 111, 1, NOW) is not None
    # 3 tries of 30 min + 10 min each = 120 min
    assert fit_problem(block(), 30, 3, NOW) is None
    assert fit_problem(block(), 31, 3, NOW) is not None
    # An ODCR's instances outlive it: no fit to make
    assert fit_problem(reservation(), 10_000, 3, NOW) is None


def test_a_reservation_fallback_lets_a_reserved_job_go_on_to_on_demand() -> None:
    without = plan_with([reservation(match="targeted")], capacity="reserved")
    with_fallback = plan_with([reservation(match="targeted")], capacity="reserved", reservation_fallback=True)

    assert [c.reservation for c in without.candidates] == ["cr-0123456789abcdef0"]
    assert with_fallback.candidates[0].reservation == "cr-0123456789abcdef0"
    assert {c.instance_type for c in with_fallback.candidates[1:]} == {"g5.xlarge", "g6.xlarge"}


def test_a_capacity_block_is_priced_at_its_fee_over_its_instance_hours() -> None:
    # Given a 24-hour block of 2 instances bought for $96 / Then an instance-hour costs $2
    rate = hourly_rate(block(), PriceQuote(hourly_usd=1.006, pricing="on-demand"))

    assert rate is not None and rate.hourly_usd == 2.0
    assert "Capacity Block cr-0123456789abcdef0: $96 up front" in rate.pricing


def test_an_odcr_is_priced_at_the_on_demand_rate() -> None:
    rate = hourly_rate(reservation(), PriceQuote(hourly_usd=1.006, pricing="Price List"))

    assert rate is not None and rate.hourly_usd == 1.006
    assert rate.pricing.startswith("On-Demand Capacity Reservation cr-0123456789abcdef0, billed at the on-demand")


def test_an_attempt_on_a_reservation_costs_its_rate_and_adds_nothing_to_the_bill_unlike_on_demand() -> None:
    # Given an hour on an ODCR of g5.xlarge, an hour on a block at $2 an instance-hour, and an hour on-demand
    on_demand = PriceQuote(hourly_usd=1.006, pricing="Price List")
    odcr = hourly_rate(reservation(), on_demand)
    at_block_rate = hourly_rate(block(), on_demand)
    assert odcr is not None and at_block_rate is not None

    # When each is priced
    costs = [attempt_cost(quote, 3600) for quote in (odcr, at_block_rate, on_demand)]

    # Then each costs what the account pays for the hour, and only the on-demand one adds to the bill
    assert [(c.usd, c.marginal_usd) for c in costs] == [(1.006, 0.0), (2.0, 0.0), (1.006, 1.006)]


def test_a_reservation_and_a_block_are_billed_apart_from_on_demand() -> None:
    # Given a job that fits an ODCR of g5.xlarge, and one that fits a Capacity Block of it
    odcr = plan_with([reservation()]).candidates[0]
    on_block = plan_with([block()], capacity="reserved", timeout_minutes=10).candidates[0]

    # Then each says how it is billed, and a block is priced at its fee
    assert (odcr.capacity_type, on_block.capacity_type) == ("reserved", "capacity-block")
    assert (on_block.hourly_usd, on_block.marginal_hourly_usd) == (2.0, 0.0)
    assert capacity_type(CapacityType.ON_DEMAND, None, None) == "on-demand"


def test_a_reservations_free_instances_are_idle_waste_split_by_day() -> None:
    # Given 3 of 4 instances free, at $1 an instance-hour, from 23:00 to 01:00
    rate = PriceQuote(hourly_usd=1.0, pricing="on-demand")
    entries = reservation_idle(reservation(), rate, "2026-11-24T23:00:00Z", "2026-11-25T01:00:00Z")

    # Then each day has its hour of 3 idle instances, charged to the reservation
    assert [(e.day, e.usd, e.reason, e.instance_id) for e in entries] == [
        ("2026-11-24", 3.0, RESERVATION_IDLE, "cr-0123456789abcdef0"),
        ("2026-11-25", 3.0, RESERVATION_IDLE, "cr-0123456789abcdef0"),
    ]


def test_a_full_or_scheduled_reservation_has_no_idle_waste() -> None:
    rate = PriceQuote(hourly_usd=1.0, pricing="on-demand")
    span = ("2026-11-24T08:00:00Z", NOW)

    assert reservation_idle(reservation(available=0), rate, *span) == []
    assert reservation_idle(block(state="scheduled"), rate, *span) == []


def test_a_reservations_launch_template_targets_it_and_a_blocks_has_its_market_type() -> None:
    base = {"UserData": "mime", "InstanceMarketOptions": {"MarketType": "spot"}}

    odcr = reservation_launch_data(base, reservation())
    capacity_block = reservation_launch_data(base, block())

    target = {"CapacityReservationTarget": {"CapacityReservationId": "cr-0123456789abcdef0"}}
    assert (odcr["UserData"], odcr["CapacityReservationSpecification"]) == ("mime", target)
    assert "InstanceMarketOptions" not in odcr
    assert capacity_block["InstanceMarketOptions"] == {"MarketType": "capacity-block"}


def test_a_scheduled_blocks_size_is_read_from_its_requested_quantity_tag() -> None:
    # EC2 shows a Capacity Block's capacity as zero before it begins, its size in a tag
    described = {
        "CapacityReservationId": "cr-1",
        "InstanceType": "p5.48xlarge",
        "AvailabilityZone": "us-east-1a",
        "State": "scheduled",
        "TotalInstanceCount": 0,
        "AvailableInstanceCount": 0,
        "ReservationType": "capacity-block",
        "InstanceMatchCriteria": "targeted",
        "Tags": [{"Key": "aws:ec2capacityreservation:incrementalRequestedQuantity", "Value": "4"}],
    }

    held = reservation_of(described)

    assert (held.total, held.capacity_block, held.match) == (4, True, "targeted")
