"""GET /costs: every priced attempt, per day and grouped, totals exactly the sum of the parts; CSV too."""

from __future__ import annotations

import csv
import io

from functions.shared.domain.core.money import PriceQuote
from functions.shared.domain.core.vocabulary import AttemptStatus, CapacityType
from functions.shared.domain.cost.attempts import Cost, attempt_cost
from functions.shared.domain.jobs.records import AttemptRecord
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.domain.reservations.reservation import Reservation, hourly_rate
from functions.shared.usecases.cost.report import cost_csv, cost_report

REQUEST = {"image": "img", "command": ["x"]}


def priced(ports, job_id: str, name: str, attempts: list[tuple[str, str, float]]) -> None:
    ports.jobs.create_job(job_id, JobRequest.model_validate(REQUEST | {"name": name}))
    for number, (instance_type, capacity, usd) in enumerate(attempts, start=1):
        cost = Cost(usd=usd, hourly_usd=1.0, runtime_seconds=60, gpu_share=1.0, pricing="test")
        ports.jobs.put_attempt(job_id, number, AttemptRecord(
            instance_type=instance_type, capacity=CapacityType(capacity), job_queue="q",
            status=AttemptStatus.FAILED, cost=cost))  # fmt: skip


def test_every_attempt_counts_and_totals_are_the_exact_sum_of_the_parts(ports):
    # Given a job that fell back once (its first attempt cost something too) and another on spot
    priced(ports, "job-a", "train", [("g6.xlarge", "on-demand", 0.1), ("g5.xlarge", "on-demand", 0.2)])
    priced(ports, "job-b", "eval", [("g5.xlarge", "spot", 0.3)])
    today = ports.jobs.get_job("job-a").created_at[:10]

    # When / Then
    report = cost_report(today, today, ports, group_by="gpu_type")
    assert report.total_usd == 0.6  # not 0.6000000000000001
    [day] = report.days
    assert day.by_gpu_type == {"g5.xlarge": 0.5, "g6.xlarge": 0.1}
    assert day.by_capacity_type == {"on-demand": 0.3, "spot": 0.3}
    assert day.by_job_name == {"eval": 0.3, "train": 0.3}
    assert [(g.key, g.usd, g.attempts) for g in report.groups] == [("g5.xlarge", 0.5, 2), ("g6.xlarge", 0.1, 1)]


def test_csv_has_one_row_per_priced_attempt_whose_sum_is_the_total(ports):
    priced(ports, "job-a", "train", [("g6.xlarge", "on-demand", 0.1), ("g5.xlarge", "on-demand", 0.2)])
    today = ports.jobs.get_job("job-a").created_at[:10]
    rows = list(csv.DictReader(io.StringIO(cost_csv(today, today, ports))))
    assert [(r["job_id"], r["attempt"], r["gpu_type"], r["usd"]) for r in rows] == [
        ("job-a", "1", "g6.xlarge", "0.1"),
        ("job-a", "2", "g5.xlarge", "0.2"),
    ]


def test_costs_grouped_by_region_say_each_groups_region_and_an_attempt_without_one_is_homes(ports):
    # Given a job whose home attempt (recorded before regions: no region) fell back to us-west-2
    priced(ports, "job-a", "train", [("g5.xlarge", "on-demand", 0.1), ("g5.xlarge", "on-demand", 0.2)])
    ports.jobs.update_attempt("job-a", 2, {"region": "us-west-2"})
    today = ports.jobs.get_job("job-a").created_at[:10]

    # When / Then each region is a group carrying its region, and every day is split by region too
    report = cost_report(today, today, ports, group_by="region")
    assert [(g.key, g.region, g.usd) for g in report.groups] == [("us-west-2", "us-west-2", 0.2),
                                                                 ("us-east-1", "us-east-1", 0.1)]  # fmt: skip
    assert report.days[0].by_region == {"us-east-1": 0.1, "us-west-2": 0.2}
    # And the CSV names each attempt's region
    rows = list(csv.DictReader(io.StringIO(cost_csv(today, today, ports))))
    assert [r["region"] for r in rows] == ["us-east-1", "us-west-2"]


def test_reserved_and_capacity_block_attempts_are_grouped_apart_each_with_what_it_added_to_the_bill(ports):
    # Given an on-demand attempt, one on an ODCR and one on a Capacity Block, priced as the pricing prices them
    on_demand = PriceQuote(hourly_usd=1.0, pricing="Price List")
    odcr = Reservation(reservation_id="cr-0123456789abcdef0", instance_type="g5.xlarge", zone="z", state="active",
                       total=2, available=1)  # fmt: skip
    block = odcr.model_copy(update={"reservation_id": "cr-0123456789abcdef1", "capacity_block": True})
    ports.jobs.create_job("job-a", JobRequest.model_validate(REQUEST | {"name": "train"}))
    for number, held in enumerate([None, odcr, block], start=1):
        quote = hourly_rate(held, on_demand) if held else on_demand
        assert quote is not None
        in_it = held.reservation_id if held else None
        ports.jobs.put_attempt("job-a", number, AttemptRecord(
            instance_type="g5.xlarge", capacity=CapacityType.ON_DEMAND, job_queue="q", status=AttemptStatus.FAILED,
            reservation=in_it, reserved=held, cost=attempt_cost(quote, 360)))  # fmt: skip
    today = ports.jobs.get_job("job-a").created_at[:10]

    # When the costs are grouped by capacity type
    report = cost_report(today, today, ports, group_by="capacity_type")

    # Then each capacity type is a group of its own, and only the on-demand one added to the bill
    groups = {g.key: (g.usd, g.marginal_usd) for g in report.groups}
    assert groups == {"on-demand": (0.1, 0.1), "reserved": (0.1, 0.0), "capacity-block": (0.1, 0.0)}
    assert (report.total_usd, report.marginal_usd) == (0.3, 0.1)
    assert report.days[0].by_capacity_type == {"capacity-block": 0.1, "on-demand": 0.1, "reserved": 0.1}
    # And the CSV says the same of each attempt
    rows = list(csv.DictReader(io.StringIO(cost_csv(today, today, ports))))
    assert [(r["capacity_type"], r["usd"], r["marginal_usd"]) for r in rows] == [
        ("on-demand", "0.1", "0.1"), ("reserved", "0.1", "0.0"), ("capacity-block", "0.1", "0.0")]  # fmt: skip


def test_a_reserved_attempt_priced_before_marginal_costs_were_said_added_nothing_to_the_bill(ports):
    # Given an attempt on an ODCR whose cost was stored without what it added to the bill
    priced(ports, "job-a", "train", [("g5.xlarge", "on-demand", 0.2)])
    ports.jobs.update_attempt("job-a", 1, {"reservation": "cr-0123456789abcdef0"})
    today = ports.jobs.get_job("job-a").created_at[:10]

    # When / Then it counts as reserved, adding nothing
    report = cost_report(today, today, ports, group_by="capacity_type")
    assert [(g.key, g.usd, g.marginal_usd) for g in report.groups] == [("reserved", 0.2, 0.0)]
