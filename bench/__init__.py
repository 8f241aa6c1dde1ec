"""GPU Pilot benchmarks: `python -m bench.run` (or `make bench`) writes bench/results/*.json.

Each result is `{"benchmark", "measured_at", "summary", "method", "notes", "environment", "metrics", "details"}`
(`python -m bench.render` writes docs/benchmarks.md from them: summary, method and notes are the bench's words
there); every metric is `{"value", "unit", "baseline", "ratio"}` with its baseline measured in the same run (or a
goal) and `ratio = value / baseline`, and a metric the bench has a goal for adds `"goal": {"of", "op", "target"}`
(bench/render.py's docstring has the format): the page says "met" or "missed" from the figure and the goal, never
from the bench's words. Nothing here asserts a timing; each bench's test (tests/bench/) holds the product to what the
bench measures with counts where it can, and shows the bench's figure moving against a deliberately worse variant.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = Path(__file__).resolve().parent / "results"


# How a goal compares a metric's figure with its target.
COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "<=": lambda figure, target: figure <= target,
    ">=": lambda figure, target: figure >= target,
    "==": lambda figure, target: figure == target,
}


def at_most(target: float, of: str = "value") -> dict[str, Any]:
    """A goal: the metric's `of` ("value" or "ratio") at most `target`."""
    return {"of": of, "op": "<=", "target": target}


def at_least(target: float, of: str = "value") -> dict[str, Any]:
    """A goal: the metric's `of` ("value" or "ratio") at least `target`."""
    return {"of": of, "op": ">=", "target": target}


def metric(
    value: float, unit: str, baseline: float, digits: int = 3, goal: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One metric; value and baseline are rounded first, so the stored ratio is theirs exactly. `goal` (at_most,
    at_least): what the figure must be for the page to say "met"."""
    value = round(float(value), digits)
    baseline = round(float(baseline), digits)
    if not baseline:
        raise ValueError(f"a baseline of {baseline} gives no ratio")
    ratio = round(value / baseline, 3)
    found: dict[str, Any] = {"value": value, "unit": unit, "baseline": baseline, "ratio": ratio}
    if goal is not None:
        if goal["of"] not in ("value", "ratio") or goal["op"] not in COMPARISONS:
            raise ValueError(f"not a goal: {goal}")
        found["goal"] = goal
    return found


def verdict(found: dict[str, Any]) -> str | None:
    """'met' or 'missed', from a metric's figure and its goal; None for a metric without a goal."""
    goal = found.get("goal")
    if not goal:
        return None
    figure = float(found[goal["of"]])
    return "met" if COMPARISONS[goal["op"]](figure, float(goal["target"])) else "missed"


def api_name(model: Any) -> str:
    """An AWS call as IAM names its action, from botocore's operation model: "dynamodb:Query",
    "states:SendTaskSuccess"."""
    return f"{model.service_model.signing_name}:{model.name}"


def by_api(calls: list[str]) -> dict[str, int]:
    """Calls named as api_name names them: how many of each, in name order."""
    found: dict[str, int] = {}
    for name in calls:
        found[name] = found.get(name, 0) + 1
    return dict(sorted(found.items()))


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def environment() -> dict[str, Any]:
    """Where the numbers were taken: interpreter, CPUs, and the versions that shape them."""
    versions: dict[str, str | None] = {}
    for package in ("boto3", "botocore", "aws-lambda-powertools", "aws-xray-sdk", "pydantic", "moto"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count() or 0
    return {
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "packages": versions,
    }


def emit(result: dict[str, Any], output: str | Path | None) -> None:
    """A bench's result as JSON: into `output` when given (what bench.run reads back), else on stdout."""
    import json

    text = json.dumps(result, indent=2)
    if output:
        Path(output).write_text(text + "\n")
    else:
        print(text)
