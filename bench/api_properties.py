"""Property-based API testing, the longer profile: schemathesis against the local cloud with every check.

The test suite runs the fast profile (5 examples per operation and phase); this runs 60, in the same local
cloud, after the fast one. Metrics: failures per generated case (goal 0) for each profile, and the longer
profile's cases per second against the fast one's.

    python -m bench.api_properties [--profile fast] [--seed-bug] [--output FILE]
"""

from __future__ import annotations

import argparse
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import REPO_ROOT, at_most, emit, environment, metric, utc_now

NAME = "api_properties"
PROFILES = ("fast", "long")
SUMMARY = (
    "Property-based tests of the HTTP API against its OpenAPI document: schemathesis generates requests and runs "
    "every check it has (server errors, status codes, content types, response schemas, ...) and ours. Goal: no "
    "failure in either profile."
)
NOTES = (
    "Every check schemathesis has runs but use_after_free: the API's one DELETE cancels a job that stays readable "
    "(the public contract), so a read after it is not a use after free; tests/e2e/api_properties/schemathesis.toml "
    "gives the reason for each allowance. The fast profile runs in make test (tests/e2e/test_api_properties.py)."
)


def seed_a_server_bug() -> None:
    """A deliberately worse API (the bench's own test): a job request that fails validation answers 500 instead
    of its 400 naming the field (pydantic's ValidationError escapes the handler)."""
    from pydantic import ValidationError

    from functions.api.handler import app

    def escape(error: ValidationError) -> Any:
        raise RuntimeError("unhandled: the request did not validate") from error

    app.exception_handler(ValidationError)(escape)


def run(profiles: tuple[str, ...] = PROFILES, seeded_bug: bool = False) -> dict[str, Any]:
    from gpupilot.localcloud.server import LocalCloud
    from gpupilot.localcloud.world import JobsWorld, World
    from gpupilot.openapi import render
    from tests.e2e.api_properties.runner import FAST, LONG, run_schemathesis

    if seeded_bug:
        seed_a_server_bug()
    outcomes: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        document = Path(tmp) / "openapi.local.json"
        document.write_text(render(local=True))
        cloud = LocalCloud(
            World(jobs=JobsWorld(runtime_seconds=1)), port=0, sweep_seconds=0, log_file=Path(tmp) / "bench.log"
        ).start()
        try:
            for name, profile in (("fast", FAST), ("long", LONG)):
                if name not in profiles:
                    continue
                started = time.perf_counter()
                outcome = run_schemathesis(cloud.api_url, document, profile)
                outcomes[name] = (outcome, time.perf_counter() - started)
        finally:
            cloud.stop()
    metrics: dict[str, Any] = {}
    details: dict[str, Any] = {"seeded_bug": seeded_bug}
    for name, (outcome, seconds) in outcomes.items():
        metrics[f"failures_per_case_{name}"] = metric(
            outcome.failures, "failures / case", max(outcome.generated, 1), goal=at_most(0)
        )
        details[name] = {"generated": outcome.generated, "failures": outcome.failures, "seconds": round(seconds, 1)}
        details[f"{name}_output_tail"] = anonymous(outcome.output[-3000:]) if outcome.failures else ""
    if {"fast", "long"} <= outcomes.keys():
        (fast, fast_seconds), (long, long_seconds) = outcomes["fast"], outcomes["long"]
        metrics["cases_per_second_long_vs_fast"] = metric(
            long.generated / long_seconds, "cases/s", max(fast.generated / fast_seconds, 0.001)
        )
    return {
        "benchmark": NAME,
        "measured_at": utc_now(),
        "summary": SUMMARY,
        "notes": NOTES,
        "method": "schemathesis run --checks all (but use_after_free: the API's one DELETE cancels by contract) "
        "plus the custom check of tests/e2e/api_properties/hooks.py, against the local cloud's OpenAPI document; "
        "fast profile = the test suite's (5 examples), long = 60 examples, same seed, same cloud"
        + (" (a server bug seeded: a job request that fails validation answers 500)" if seeded_bug else ""),
        "environment": environment(),
        "metrics": metrics,
        "details": details,
    }


def anonymous(report: str) -> str:
    """schemathesis's report without the machine's paths (the clone's, the temporary folder's): a result file is
    committed."""
    return re.sub(r"[^\s]*gpupilot-bench-[^/\s]*/", "<tmp>/", report.replace(f"{REPO_ROOT}/", ""))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", action="append", choices=PROFILES, help="only this profile")
    parser.add_argument("--seed-bug", action="store_true", help="a deliberately worse API: bad job bodies answer 500")
    parser.add_argument("--output", type=Path, help="write the JSON here instead of stdout")
    args = parser.parse_args(argv)
    emit(run(tuple(args.profile or PROFILES), args.seed_bug), args.output)


if __name__ == "__main__":
    main()
