"""The planning walk reads one way: signals in, offerings, the price band, the ranking, the rejections, the plan out,
each step entered once (functions/shared/domain/capacity/planning.py draws it)."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from functions.shared.domain.capacity import planning
from functions.shared.domain.capacity.market import MarketSignals
from functions.shared.domain.capacity.planning import plan_across
from functions.shared.domain.capacity.quotas import QuotaState
from functions.shared.domain.core.money import PriceQuote
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.usecases.capacity.select import plan_request
from tests.unit.builders import ZONES, catalog, gpu_type, offered_everywhere, signals
from tests.unit.usecases.conftest import REQUEST

CAPACITY = Path(planning.__file__).parent


def steps() -> list[str]:
    """The walk's steps, in the order planning.py's docstring draws them."""
    drawn = ast.get_docstring(ast.parse(Path(planning.__file__).read_text())) or ""
    return re.findall(r"^\s{4}(\w+)\.py\s", drawn, re.MULTILINE)


@contextmanager
def entered_steps() -> Iterator[list[str]]:
    """The steps whose functions are called while the block runs, each run of calls within one step said once."""
    files = {str(CAPACITY / f"{step}.py"): step for step in steps()}
    entered: list[str] = []

    def profile(frame: Any, event: str, _: Any) -> None:
        if event == "call":
            step = files.get(frame.f_code.co_filename)
            if step is not None and (not entered or entered[-1] != step):
                entered.append(step)

    sys.setprofile(profile)
    try:
        yield entered
    finally:
        sys.setprofile(None)


def busy_signals(region: str) -> Any:
    """A region where every step has work: types that fit and do not, a quota that blocks the cheap one, an offering
    beyond the band, an unpriced one, spot prices."""
    types = catalog(
        gpu_type("g4dn.xlarge", gpu_model="T4", gpu_memory_gib=16.0, vcpus=4, memory_gib=16.0),
        gpu_type("g5.xlarge", gpu_model="A10G", gpu_memory_gib=24.0, vcpus=4, memory_gib=16.0),
        gpu_type("g6.xlarge", gpu_model="L4", gpu_memory_gib=24.0, vcpus=4, memory_gib=16.0),
        gpu_type("p4d.24xlarge", gpu_model="A100", gpus=8, gpu_memory_gib=40.0, vcpus=96, memory_gib=1152.0),
        gpu_type("g5g.xlarge", gpu_model="T4g", gpu_memory_gib=16.0, vcpus=4, memory_gib=8.0, arch="arm64"),
    )
    spot = {t: {z: PriceQuote(hourly_usd=0.3, pricing="spot history") for z in ZONES} for t in ("g5.xlarge",)}
    market = MarketSignals(
        spot_prices=spot, quotas={"L-3819A6DF": QuotaState(code="L-3819A6DF", name="spot G", vcpus=0)}
    )
    prices = {"g4dn.xlarge": 0.526, "g5.xlarge": 1.006, "p4d.24xlarge": 21.96}
    found = signals(types, offered_everywhere(types), prices, market)
    return found.model_copy(update={"region": region})


def walk_of(run: Callable[[], object]) -> list[str]:
    with entered_steps() as entered:
        run()
    return entered


def test_planning_draws_every_step_module_of_the_capacity_package():
    # Given the walk planning.py draws / Then every step is a module, and the first is the signals
    assert steps()[:3] == ["signals", "offerings", "band"] and steps()[-1] == "warnings"
    assert all((CAPACITY / f"{step}.py").exists() for step in steps())


def test_one_plan_across_two_regions_enters_each_step_once_in_the_walk_s_order():
    # Given a spot-first request and two capacity regions whose offerings reach every step
    request = JobRequest.model_validate(REQUEST | {"capacity": "spot-first", "price_band": 2})
    regions = [busy_signals("us-east-1"), busy_signals("us-west-2")]

    # When planning
    entered = walk_of(lambda: plan_across(request, regions))

    # Then offerings, band, ranking, rejections and plan are entered once each, in that order
    assert entered == ["offerings", "band", "ranking", "rejections", "plan"]


def test_a_plan_request_walks_from_its_signals_to_its_warnings_once(ports):
    # Given an on-demand request (no placement score to ask for)
    request = JobRequest.model_validate(REQUEST | {"instance_types": ["g4dn.xlarge", "g5.xlarge", "g6.xlarge"]})

    # When the use case plans it
    entered = walk_of(lambda: plan_request(request, ports))

    # Then every step is entered once, in the order planning.py draws
    assert entered == steps()


def test_a_spot_request_walks_twice_the_first_time_from_its_signals_for_the_placement_scores(ports):
    # Given a spot request three types could run (worth asking their placement scores)
    ports.prices.spot_table = dict.fromkeys(["g4dn.xlarge", "g4dn.2xlarge", "g4dn.4xlarge"], 0.2)
    request = JobRequest.model_validate(
        REQUEST | {"capacity": "spot", "instance_types": ["g4dn.xlarge", "g4dn.2xlarge", "g4dn.4xlarge"]}
    )

    # When the use case plans it
    entered = walk_of(lambda: plan_request(request, ports))

    # Then a first walk, unscored, runs within the signals step (which then names the types to score), and the
    # plan's own walk follows it once
    walk = steps()[1:-1]
    assert entered == ["signals", *walk, "signals", *walk, "warnings"]


def test_a_step_imports_no_step_after_it():
    # Given the steps in order / When reading each one's imports
    order = steps()
    for position, step in enumerate(order):
        tree = ast.parse((CAPACITY / f"{step}.py").read_text())
        imported = {
            node.module.rsplit(".", 1)[-1]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(planning.__package__ or "")
        }
        # Then none is a later step (the walk is planning.py's, which the first step's preview calls)
        assert not imported & set(order[position + 1 :]), (step, imported & set(order[position + 1 :]))
