"""Render docs/scaling.md from bench/results/scaling.json: every figure on the page comes from the result file, which
`python -m bench.scaling` writes, so the page cannot drift from what was measured.

    python -m bench.scaling_page            # write docs/scaling.md
    python -m bench.scaling_page --check    # exit 1 when docs/scaling.md is not what the result renders
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from bench import REPO_ROOT, RESULTS_DIR

DOCUMENT = REPO_ROOT / "docs" / "scaling.md"
RESULT = RESULTS_DIR / "scaling.json"
INTRO = """\
# The scale a deployment holds

Rendered by `python -m bench.scaling_page` from `bench/results/scaling.json`, which `python -m bench.scaling` writes;
do not edit by hand: `tests/bench/test_scaling.py` fails when this page is not what the result renders, and when a
job's or a sweep's AWS calls by API grow above the figures committed there."""


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if float(value).is_integer() or abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) < 1 else f"{value:,.2f}".rstrip("0").rstrip(".")


def _calls_table(calls: dict[str, int], label: str) -> str:
    lines = [f"| service | API | {label} |", "|---|---|---:|"]
    for api, count in sorted(calls.items()):
        service, operation = api.split(":", 1)
        lines.append(f"| {service} | {operation} | {count} |")
    lines.append(f"| **all** | | **{sum(calls.values())}** |")
    return "\n".join(lines)


def _quota_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| quota | default, per second | a job takes | the sweeps take, per second | jobs per minute |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        name = f"[{row['service']}: {row['name']}]({row['source']})"
        lines.append(
            f"| {name} | {_number(row['per_second'])} | {_number(row['per_job'])} | "
            f"{_number(row['sweeps_per_second'])} | {_number(row['jobs_per_minute'])} |"
        )
    return "\n".join(lines)


def render(result: dict[str, Any] | None = None) -> str:
    """The page, from `result` (the committed scaling.json when None)."""
    result = result if result is not None else json.loads(RESULT.read_text())
    details = result["details"]
    job, sweep, first = details["job"], details["sweep"], details["quotas"][0]
    new_pool = details["first_job_in_a_new_pool"]
    assumptions = details["assumptions"]
    invocations = ", ".join(f"{key} {n}" for key, n in sorted(job["lambda_invocations_by_function"].items()))
    sources = sorted({(row["service"], row["source"], row["name"], row["says"]) for row in details["quotas"]})
    sections = [
        INTRO,
        f"Measured {result['measured_at']}. {result['summary']}",
        "## What one region holds\n\n"
        f"**{_number(first['jobs_per_minute'])} jobs a minute, sustained**: the first quota a deployment meets is "
        f"{first['service']}: {first['name']} ({_number(first['per_second'])} a second; a job takes "
        f"{_number(first['per_job'])}). Each quota's row: jobs per minute = (its rate - what the sweeps take of "
        "it) x 60 / what a job takes of it; the sweeps are one every "
        f"{sweep['period_seconds'] // 60} minutes over {sweep['jobs']:,} live jobs in {sweep['queues']} queues (the "
        "sweep bench's world).\n\n" + _quota_table(details["quotas"]),
        "## What the figures say\n\n" + result["notes"],
        "## A job\n\n"
        f"One plain job, from `POST /jobs` to the end of its workflow, in a pool an earlier job made: "
        f"{job['aws_calls']} AWS calls, {job['lambda_invocations']} Lambda invocations ({invocations}), "
        f"{job['state_transitions']} state transitions, {job['eventbridge_invocations']} EventBridge invocations "
        f"(Batch's state changes sent to job_events); its record is {job['record_bytes']:,} bytes, so at most "
        f"{_number(job['dynamodb_write_units'])} write and {_number(job['dynamodb_read_units'])} read request units. "
        f"The job that makes its pool makes {new_pool['aws_calls']} calls and "
        f"{new_pool['state_transitions']} transitions. By function: "
        + "; ".join(f"{function} {sum(calls.values())}" for function, calls in sorted(job["calls_by_function"].items()))
        + ".\n\n"
        + _calls_table(job["calls"], "calls per job"),
        "## A sweep\n\n"
        f"A warm sweep of {sweep['jobs']:,} live jobs in {sweep['queues']} queues: {sweep['aws_calls']} AWS calls "
        "(the sweep bench; bench/results/sweep.json holds its timing).\n\n"
        + _calls_table(sweep["calls"], "calls per sweep"),
        "## How it was measured\n\n" + result["method"],
        "## Assumptions\n\n"
        f"- A Lambda invocation holds its concurrency for {assumptions['lambda_seconds_per_invocation']:g} s: the "
        "handlers' durations on AWS are not measured here (CloudWatch's Duration of each function gives them; the "
        "concurrency row scales with it).\n"
        "- DynamoDB request units are bounded from above: each record write is counted "
        f"{assumptions['record_write_copies']} times (the table, the two indexes that hold every attribute of a "
        "record, the sparse index) at the record's final size, each GetItem strongly consistent.\n"
        "- The quotas are the defaults AWS documents (the Regions of their highest tier where they vary: US East "
        "(N. Virginia), US West (Oregon), Europe (Ireland)); an account may have others (Service Quotas shows its "
        "own), and most can be raised.",
        "## Sources\n\nEach quota as its page gives it (the default; in the Regions of its highest tier where Regions "
        "differ):\n\n"
        + "\n".join(f"- {service}, [{name}]({source}): {says}" for service, source, name, says in sources),
    ]
    return "\n\n".join(sections) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/scaling.md is stale")
    args = parser.parse_args(argv)
    page = render()
    if args.check:
        if DOCUMENT.read_text() != page:
            print("docs/scaling.md is stale: run python -m bench.scaling_page", file=sys.stderr)
            sys.exit(1)
        return
    DOCUMENT.write_text(page)
    print(f"wrote {DOCUMENT.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
