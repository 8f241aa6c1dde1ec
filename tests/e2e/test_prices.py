"""The price a plan shows is the price the bill charges, through the local cloud's CLI and HTTP API: a job on an open
On-Demand Capacity Reservation is planned, shown and billed at the reservation's rate, adding nothing to the bill,
and grouped as reserved; a cost multiplies out as printed; a price's source is dated by a day; the price band
leaves out a type of unknown price unless a priced one of as many of the same GPUs is within it, or the request
allows unpriced types.

One local cloud for the module: home us-west-2 (whose bundled prices are dated by their month), an open ODCR of two
g5.xlarge, jobs that run 607 simulated seconds (10.1 minutes, which no rounding of the runtime multiplies out to)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from tests.e2e.conftest import RunningCloud, start_cloud, stop_cloud

pytestmark = pytest.mark.e2e
REGION = "us-west-2"
RUNTIME_SECONDS = 607
WORLD = {
    "region": REGION,
    "zones": [f"{REGION}a", f"{REGION}b"],
    "jobs": {"runtime_seconds": RUNTIME_SECONDS},
    "capacity_reservations": [{"instance_type": "g5.xlarge", "zone": f"{REGION}a", "count": 2, "match": "open"}],
}
FLAGS = ["--name", "reserved", "--image", "nvidia/cuda:12.4.1-base-ubuntu22.04"]
COMMAND = ["--", "nvidia-smi", "-L"]
JOB = {"name": "priced", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"]}
# `$usd = $hourly/h x runtime x share share by GPUs`, the runtime in s, min or h (whatever status prints it in).
PRODUCT = re.compile(r"\$([\d.]+)\s+= \$([\d.]+)/h x ([\d.]+) (s|min|h) x ([\d.e-]+) share by GPUs")
SECONDS = {"s": 1, "min": 60, "h": 3600}


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningCloud]:
    # 607 simulated seconds take about one real second.
    running = start_cloud(tmp_path_factory.mktemp("prices"), WORLD, speedup=600)
    yield running
    stop_cloud(running)


def cli_json(cloud: RunningCloud, *args: str) -> Any:
    done = cloud.cli("--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def row(printed: str, label: str) -> str:
    """The value of a `label  value` row of a printed summary."""
    [found] = [line for line in printed.splitlines() if line.startswith(label + " ")]
    return found.split(None, len(label.split()))[-1]


@pytest.fixture(scope="module")
def reserved_job(cloud: RunningCloud) -> dict[str, Any]:
    """A job that fits the reservation and g5.xlarge on-demand, planned, submitted and ended through the CLI: what
    each command said of it."""
    [reservation] = cli_json(cloud, "reservations")["reservations"]
    flags = [*FLAGS, "--instance-type", "g5.xlarge"]
    plan = cli_json(cloud, "plan", *flags, *COMMAND)
    plan_table = cloud.cli("plan", *flags, *COMMAND)
    submitted = cloud.cli("submit", "--yes", *flags, *COMMAND)
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.split()[1]
    cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"}, 90)
    status = cloud.cli("status", job_id)
    costs = cloud.cli("costs", "--group-by", "capacity_type")
    return {
        "reservation": reservation["reservation_id"],
        "plan": plan,
        "plan_table": plan_table.stdout,
        "submitted": submitted.stdout,
        "job": cli_json(cloud, "status", job_id),
        "status": status.stdout,
        "costs": cli_json(cloud, "costs", "--group-by", "capacity_type"),
        "costs_table": costs.stdout,
    }


def test_a_job_on_an_open_reservation_is_planned_at_the_rate_it_is_billed_adding_nothing(reserved_job):
    # Given the plan of a job that fits the open ODCR, and the job once it ran there
    first, job = reserved_job["plan"]["candidates"][0], reserved_job["job"]
    [attempt] = job["attempts"]

    # Then the plan's first candidate is the reservation at g5.xlarge's on-demand rate, adding nothing to the bill
    assert (first["reservation"], first["capacity_type"]) == (reserved_job["reservation"], "reserved")
    assert (first["hourly_usd"], first["marginal_hourly_usd"], first["marginal_usd"]) == (1.006, 0.0, 0.0)
    # And the attempt ran there and was billed at the very rate the plan showed, adding nothing
    assert (job["status"], attempt["reservation"], attempt["capacity_type"]) == (
        "SUCCEEDED", reserved_job["reservation"], "reserved")  # fmt: skip
    assert (attempt["cost"]["hourly_usd"], attempt["cost"]["marginal_usd"]) == (first["hourly_usd"], 0.0)
    assert attempt["cost"]["usd"] == job["cost"]["usd"] > 0 and job["cost"]["marginal_usd"] == 0.0


def test_plan_submit_and_status_print_the_reservation_s_rate_and_that_it_adds_nothing(reserved_job):
    # Given what plan, submit and status printed of the job on the reservation
    first_row = reserved_job["plan_table"].splitlines()[2].split()

    # Then the plan's row says reserved, the rate, and 0 added per hour
    assert first_row[1] == "g5.xlarge" and first_row[6:9] == ["reserved", "1.0060", "0"]
    # And submit said the same of its first choice
    assert "first choice  g5.xlarge (1x A10G, reserved) $1.0060/h, adds $0/h for this job" in reserved_job["submitted"]
    # And status says the job was reserved, and added nothing to the bill, naming the reservation
    assert row(reserved_job["status"], "GPU type").endswith("(A10G, reserved)")
    assert row(reserved_job["status"], "marginal") == (
        f"$0 added to the bill: {reserved_job['reservation']} paid for whether used or not"
    )


def test_status_prints_a_cost_that_multiplies_out_as_printed(reserved_job):
    # Given the cost row status printed, of a job that ran 607 s (10.1 min)
    printed = row(reserved_job["status"], "cost")

    # Then it is its own product, to the printed millionth of a dollar
    usd, hourly, runtime, unit, share = PRODUCT.match(printed).groups()  # type: ignore[union-attr]
    product = Decimal(hourly) * Decimal(runtime) * SECONDS[unit] / 3600 * Decimal(share)
    assert product.quantize(Decimal("1e-6")) == Decimal(usd), printed
    assert (hourly, runtime, unit) == ("1.006", str(RUNTIME_SECONDS), "s")


def test_costs_group_the_reserved_attempt_apart_from_on_demand_adding_nothing(reserved_job):
    # Given the costs grouped by capacity type after the job ran on the reservation
    groups = {g["key"]: g for g in reserved_job["costs"]["groups"]}

    # Then its attempt is reserved, at the cost status showed, adding nothing; none is counted as on-demand
    assert set(groups) == {"reserved"}
    assert (groups["reserved"]["usd"], groups["reserved"]["marginal_usd"]) == (reserved_job["job"]["cost"]["usd"], 0.0)
    assert reserved_job["costs"]["marginal_usd"] == 0.0
    # And the printed table says so
    [printed] = [line.split() for line in reserved_job["costs_table"].splitlines() if line.startswith("reserved ")]
    assert printed == ["reserved", "1", f"{groups['reserved']['usd']:.6f}", "0.000000"]


def test_a_price_s_source_is_dated_by_a_day(cloud: RunningCloud):
    # Given a plan in us-west-2, whose prices the Price List dates (the local one from a snapshot of 2025-08)
    plan = cloud.api.request("POST", "/plan", JOB | {"instance_types": ["g6.xlarge"]}).body

    # Then the price's source names a day
    [candidate] = plan["candidates"]
    assert re.fullmatch(rf"on-demand {REGION} AWS Price List of \d{{4}}-\d{{2}}-\d{{2}}", candidate["pricing"])


def test_the_price_band_leaves_out_an_unpriced_type_no_priced_one_bounds_and_allow_unpriced_lets_it_in(cloud):
    # Given a 1-GPU job: p5e.48xlarge (8 H200s) has no known price in us-west-2, p5en.48xlarge (8 H200s too) and
    # p4d.24xlarge are priced beyond the band of the cheapest 1-GPU types
    # When it is planned as it is, and allowing unpriced types
    plan = cloud.api.request("POST", "/plan", JOB).body
    allowed = cloud.api.request("POST", "/plan", JOB | {"allow_unpriced": True}).body

    # Then p5e is no candidate, left out naming allow_unpriced, as p4d is by price_band
    assert "p5e.48xlarge" not in {c["instance_type"] for c in plan["candidates"]}
    rejected = {r["instance_type"]: r for r in plan["rejected"]}
    assert rejected["p5e.48xlarge"]["field"] == "allow_unpriced"
    why = rejected["p5e.48xlarge"]["reason"]
    assert "p5en.48xlarge, priced with as many of its GPUs (8 H200 GPUs), is beyond" in why
    assert rejected["p4d.24xlarge"]["field"] == "price_band"
    # And allow_unpriced makes it a candidate, after every priced one, saying why
    [p5e] = [c for c in allowed["candidates"] if c["instance_type"] == "p5e.48xlarge"]
    assert p5e["hourly_usd"] is None and "allowed by allow_unpriced" in p5e["why"]


def test_a_job_only_unpriced_types_fit_is_refused_naming_allow_unpriced_and_the_flag_lets_it_plan(cloud):
    # Given a request only p5e.48xlarge (no known price) can serve
    only = [*FLAGS, "--instance-type", "p5e.48xlarge", "--gpus", "8"]

    # When it is submitted through the API, and planned through the CLI with and without --allow-unpriced
    refused = cloud.api.request("POST", "/jobs", JOB | {"instance_types": ["p5e.48xlarge"], "gpus": 8})
    planned = cloud.cli("plan", *only, *COMMAND)
    allowed = cloud.cli("--json", "plan", *only, "--allow-unpriced", *COMMAND)

    # Then the API refuses it, nothing started, naming allow_unpriced; the CLI's plan says the same
    assert refused.status == 400 and refused.body["error"] == "NoCandidate", refused.body
    [p5e] = [r for r in refused.body["rejected"] if r["instance_type"] == "p5e.48xlarge"]
    assert p5e["field"] == "allow_unpriced"
    assert planned.returncode == 2 and "allow_unpriced" in planned.stdout + planned.stderr
    # And with --allow-unpriced it is a candidate of unknown price
    assert allowed.returncode == 0, allowed.stderr
    assert [(c["instance_type"], c["hourly_usd"]) for c in json.loads(allowed.stdout)["candidates"]] == [
        ("p5e.48xlarge", None)
    ]
