"""Render docs/benchmarks.md from bench/results/*.json: every table and every word about a bench comes from the
result files, which the benches write, so the page cannot drift from them.

    python -m bench.render            # write docs/benchmarks.md (`make bench` runs it after the benches)
    python -m bench.render --check    # exit 1 when docs/benchmarks.md is not what the results render

The result file (one per bench, bench/results/<benchmark>.json):

    {"benchmark": name, "measured_at": "YYYY-MM-DDTHH:MM:SSZ",
     "summary": what the bench is for and its goals, in words,
     "method": how it measures, "notes": what the figures show (optional),
     "environment": {"python", "cpus_usable", "packages", ...},
     "metrics": {name: {"value", "unit", "baseline", "ratio",
                        "goal": {"of": "value" | "ratio", "op": "<=" | ">=" | "==", "target": number}}},
     "details": anything else the bench found}

`goal` is optional (a metric without one is context: a baseline, a reference variant), but every bench states at
least one. The page's goal and verdict columns, and the line of goals met and missed under each table, are computed
from the figure and the goal: "met" when `metric[of] op target`, else "missed". No bench writes those words.

`summary` and `notes` may cite figures by placeholder, filled in when the page is rendered: `{metric}` or
`{metric.value}`, `{metric.ratio}`, `{metric.baseline}`, `{metric.target}`, `{metric.verdict}`, and
`{details.key.key}` for a number in details. The words that explain a miss cite the figures this way (a bench
chooses its sentences from its figures when it runs, and leaves the numbers to the page), so words and table
cannot disagree; a figure written out in the notes is history, and says when (a date in its sentence).
tests/bench/test_render.py holds every result file to this. Files written before goals existed still render (no goal
column entries, "no goal stated").
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from bench import REPO_ROOT, RESULTS_DIR, verdict

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
    "checkpoint",
    "local_e2e",
    "api_properties",
)
INTRO = """\
# Benchmarks

Rendered by `python -m bench.render` from `bench/results/*.json`, which `make bench` writes (`python -m bench.run
[--only NAME]` runs one); do not edit by hand: `tests/bench/test_render.py` fails when this page is not what the
result files render.

Each metric is `{value, unit, baseline, ratio}`, its baseline measured in the same run (or a goal, where the row
says so) and `ratio = value / baseline`; a metric with a goal shows it, and "met" or "missed" as the figure and the
goal say (computed when the page is rendered: no bench writes those words). A benchmark is evidence only if it could
fail: each bench measures what a user would see, compares like with like in one run, and has a test under
`tests/bench/` that holds the product to what it measures (with counts where it can) and sees its figure move the
wrong way against a deliberately worse variant. The numbers come from a shared 2-core development machine:
wall-clock figures are noisy there; counts are not.

The nine benchmarks: control plane cost per job, cold start, the sweep at scale, planning, faults, fallback on
Batch's verdict, a bad GPU host, load through the local cloud, API properties. The worse variants their tests run
against: a polling workflow, a late event, a call per job, no caches, a heavy import, no reconciliation, a workflow
that waits out its start wait, no quarantine, a seeded server bug."""


def _number(value: float) -> str:
    return f"{value:g}" if float(value).is_integer() else f"{value:.3f}".rstrip("0").rstrip(".")


OPS = {"<=": "≤", ">=": "≥", "==": "="}


def goal_text(found: dict[str, Any]) -> str:
    """A metric's goal in the table: 'ratio ≤ 1.3', 'value = 0'; empty without a goal."""
    goal = found.get("goal")
    return f"{goal['of']} {OPS[goal['op']]} {_number(goal['target'])}" if goal else ""


def table(metrics: dict[str, dict[str, Any]]) -> str:
    """The metrics as a markdown table (metric | value | unit | baseline | ratio | goal | verdict)."""
    lines = ["| metric | value | unit | baseline | ratio | goal | verdict |", "|---|---:|---|---:|---:|---|---|"]
    for name, m in metrics.items():
        lines.append(
            f"| {name} | {_number(m['value'])} | {m['unit']} | {_number(m['baseline'])} | {m['ratio']:.2f} "
            f"| {goal_text(m)} | {verdict(m) or ''} |"
        )
    return "\n".join(lines)


def goals_line(metrics: dict[str, dict[str, Any]]) -> str:
    """Under the table: how many of its goals the figures meet, and which they miss."""
    verdicts = {name: v for name, m in metrics.items() if (v := verdict(m)) is not None}
    if not verdicts:
        return "**Goals:** none stated in the result file."
    missed = [name for name, v in verdicts.items() if v == "missed"]
    line = f"**Goals:** {len(verdicts) - len(missed)} of {len(verdicts)} met"
    return line + (f"; missed: {', '.join(missed)}." if missed else ".")


PLACEHOLDER = re.compile(
    r"\{(details(?:\.[A-Za-z0-9_]+)+|[a-z][a-z0-9_]*(?:\.(?:value|ratio|baseline|target|verdict))?)\}"
)


def fill(words: str, result: dict[str, Any]) -> str:
    """`words` with every placeholder of a metric or of details replaced by the figure (module docstring); braces
    around anything else (an API path's {id}) are left alone."""
    metrics = result.get("metrics") or {}

    def figure(match: re.Match[str]) -> str:
        name, _, field = match.group(1).partition(".")
        if name == "details":
            found: Any = result.get("details") or {}
            for key in field.split("."):
                if not isinstance(found, dict) or key not in found:
                    raise KeyError(f"{result['benchmark']}: no {match.group(0)} in the result file")
                found = found[key]
            return _number(found) if isinstance(found, int | float) else str(found)
        if name not in metrics:
            if field:
                raise KeyError(f"{result['benchmark']}: no metric {name} for {match.group(0)}")
            return match.group(0)
        m = metrics[name]
        if field in ("", "value", "baseline"):
            return _number(m[field or "value"])
        if field == "ratio":
            return f"{m['ratio']:.2f}"
        if field == "target":
            return _number(m["goal"]["target"])
        return verdict(m) or "(no goal)"

    return PLACEHOLDER.sub(figure, words)


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
        parts += [fill(result["summary"], result), ""]
    parts += [f"Measured at {result['measured_at']} ({where}).", "", table(result["metrics"]), ""]
    parts += [goals_line(result["metrics"]), ""]
    parts += [f"**How.** {result['method']}", ""]
    if result.get("notes"):
        parts += [f"**What it shows.** {fill(result['notes'], result)}", ""]
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
