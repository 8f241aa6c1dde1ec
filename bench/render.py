"""Render docs/benchmarks.md from bench/results/*.json: every table and every word about a bench comes from the
result files, which the benches write, so the page cannot drift from them.

    python -m bench.render            # write docs/benchmarks.md (`make bench` runs it after the benches)
    python -m bench.render --check    # exit 1 when docs/benchmarks.md is not what the results render
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bench import REPO_ROOT, RESULTS_DIR

DOCUMENT = REPO_ROOT / "docs" / "benchmarks.md"
# The order of the page; a result file of any other bench follows, by name.
ORDER = (
    "control_plane",
    "cold_start",
    "sweep",
    "plan",
    "faults",
    "fallback",
    "bad_host",
    "local_e2e",
    "api_properties",
)
INTRO = """\
# Benchmarks

Rendered by `python -m bench.render` from `bench/results/*.json`, which `make bench` writes (`python -m bench.run
[--only NAME]` runs one); do not edit by hand: `tests/bench/test_render.py` fails when this page is not what the
result files render.

Each metric is `{value, unit, baseline, ratio}`, its baseline measured in the same run (or a goal, where the row
says so) and `ratio = value / baseline`. A benchmark is evidence only if it could fail: each bench measures what a
user would see, compares like with like in one run, and has a test under `tests/bench/` that runs it at a small size
against a deliberately worse variant and sees its figure move the wrong way. The numbers come from a shared 2-core
development machine: wall-clock figures are noisy there; counts are not.

The nine benchmarks: control plane cost per job, cold start, the sweep at scale, planning, faults, fallback on
Batch's verdict, a bad GPU host, load through the local cloud, API properties. The worse variants their tests run
against: a polling workflow, a late event, a call per job, no caches, a heavy import, no reconciliation, a workflow
that waits out its start wait, no quarantine, a seeded server bug."""


def _number(value: float) -> str:
    return f"{value:g}" if float(value).is_integer() else f"{value:.3f}".rstrip("0").rstrip(".")


def table(metrics: dict[str, dict[str, Any]]) -> str:
    """The metrics as a markdown table (metric | value | unit | baseline | ratio)."""
    lines = ["| metric | value | unit | baseline | ratio |", "|---|---:|---|---:|---:|"]
    for name, m in metrics.items():
        lines.append(f"| {name} | {_number(m['value'])} | {m['unit']} | {_number(m['baseline'])} | {m['ratio']:.2f} |")
    return "\n".join(lines)


def section(result: dict[str, Any]) -> str:
    """One bench: what it is for, where and when it ran, its table, how it measures, what it found."""
    name = result["benchmark"]
    env = result.get("environment") or {}
    packages = ", ".join(f"{k} {v}" for k, v in (env.get("packages") or {}).items() if v)
    where = f"Python {env.get('python', '?')}, {env.get('cpus_usable', '?')} usable CPUs" + (
        f"; {packages}" if packages else ""
    )
    parts = [f"## {name}", ""]
    if result.get("summary"):
        parts += [result["summary"], ""]
    parts += [f"Measured at {result['measured_at']} ({where}).", "", table(result["metrics"]), ""]
    parts += [f"**How.** {result['method']}", ""]
    if result.get("notes"):
        parts += [f"**What it shows.** {result['notes']}", ""]
    test = Path("tests") / "bench" / f"test_{name}.py"
    if (REPO_ROOT / test).exists():
        parts += [f"**Its test:** `{test}`.", ""]
    parts.append(f"Result file: `bench/results/{name}.json`.")
    return "\n".join(parts)


def results(directory: Path = RESULTS_DIR) -> list[dict[str, Any]]:
    """Every result file, in the page's order."""
    found = {path.stem: json.loads(path.read_text()) for path in sorted(directory.glob("*.json"))}
    names = [n for n in ORDER if n in found] + sorted(n for n in found if n not in ORDER)
    return [found[name] for name in names]


def render(directory: Path = RESULTS_DIR) -> str:
    """docs/benchmarks.md as the result files in `directory` render it."""
    return "\n\n".join([INTRO, *(section(result) for result in results(directory))]) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail when docs/benchmarks.md is stale")
    args = parser.parse_args(argv)
    page = render()
    if args.check:
        if not DOCUMENT.exists() or DOCUMENT.read_text() != page:
            print(f"{DOCUMENT.relative_to(REPO_ROOT)} is stale: run python -m bench.render", file=sys.stderr)
            return 1
        return 0
    DOCUMENT.write_text(page)
    print(f"wrote {DOCUMENT.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
