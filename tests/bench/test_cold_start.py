"""The cold-start bench compares like with like, and can fail: a handler that imports something heavy raises the
headline ratio."""

from __future__ import annotations

from typing import Any

import pytest

from bench import cold_start

pytestmark = pytest.mark.bench
HEADLINE = "worst_handler_ratio_vs_boto3_floor"


@pytest.fixture(scope="module")
def plain() -> dict[str, Any]:
    """One handler against the floors, three samples each."""
    return cold_start.run(runs=3, keys=["select_gpu"])


def test_the_headline_compares_the_handlers_with_a_floor_that_pauses_the_collector_as_they_do(
    plain: dict[str, Any],
) -> None:
    # Given the handlers run their cold start with the collector paused (Lambda's environment)
    # Then the headline's baseline is the floor paused the same way, not the floor collecting as usual
    medians = {name: found["median_ms"] for name, found in plain["details"]["candidates_cpu"].items()}
    assert plain["metrics"][HEADLINE]["baseline"] == round(medians[cold_start.FLOOR_PAUSED], 3)
    assert "gc.disable()" in next(
        c.body for c in cold_start.candidates(keys=[], full=False) if c.name == cold_start.FLOOR_PAUSED
    )


def test_a_handler_importing_something_heavy_shows_in_the_headline_ratio(plain: dict[str, Any]) -> None:
    # Given the same handler importing moto's EC2 models too (about 3x the floor's CPU on its own)
    heavy = cold_start.run(runs=3, keys=["select_gpu"], heavy_import="moto.ec2.models")
    # Then the headline ratio (CPU time, so the machine's other load hardly moves it) is far higher
    assert heavy["metrics"][HEADLINE]["value"] >= 1.5 * plain["metrics"][HEADLINE]["value"], (plain, heavy)
