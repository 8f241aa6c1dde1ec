"""Property-based API testing, the longer profile: schemathesis against the local cloud with every check.

The test suite runs the fast profile (5 examples per operation and phase); this runs 60, in the same local
cloud, after the fast one. Metrics: failures per generated case (goal 0) for each profile, and the longer
profile's cases per second against the fast one's.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from bench import environment, metric, utc_now

NAME = "api_properties"


def run() -> dict[str, Any]:
    from gpupilot.localcloud.server import LocalCloud
    from gpupilot.localcloud.world import JobsWorld, World
    from gpupilot.openapi import render
    from tests.e2e.api_properties.runner import FAST, LONG, run_schemathesis

    outcomes: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        document = Path(tmp) / "openapi.local.json"
        document.write_text(render(local=True))
        cloud = LocalCloud(
            World(jobs=JobsWorld(runtime_seconds=1)), port=0, sweep_seconds=0, log_file=Path(tmp) / "bench.log"
        ).start()
        try:
            for name, profile in (("fast", FAST), ("long", LONG)):
                started = time.perf_counter()
                outcome = run_schemathesis(cloud.api_url, document, profile)
                outcomes[name] = (outcome, time.perf_counter() - started)
        finally:
            cloud.stop()
    (fast, fast_seconds), (long, long_seconds) = outcomes["fast"], outcomes["long"]
    return {
        "benchmark": NAME,
        "measured_at": utc_now(),
        "method": "schemathesis run --checks all (but use_after_free: the API's one DELETE cancels by contract) "
        "plus the custom check of tests/e2e/api_properties/hooks.py, against the local cloud's OpenAPI document; "
        "fast profile = the test suite's (5 examples), long = 60 examples, same seed, same cloud",
        "environment": environment(),
        "metrics": {
            "failures_per_case_long": metric(long.failures, "failures / case", max(long.generated, 1)),
            "failures_per_case_fast": metric(fast.failures, "failures / case", max(fast.generated, 1)),
            "cases_per_second_long_vs_fast": metric(
                long.generated / long_seconds, "cases/s", max(fast.generated / fast_seconds, 0.001)
            ),
        },
        "details": {
            "fast": {"generated": fast.generated, "failures": fast.failures, "seconds": round(fast_seconds, 1)},
            "long": {"generated": long.generated, "failures": long.failures, "seconds": round(long_seconds, 1)},
            "long_output_tail": long.output[-3000:] if long.failures else "",
        },
    }
