"""Run the benchmarks (cold start, control plane, sweep, plan, API properties, faults, fallback, load, bad host,
checkpoint, scaling), write bench/results/<name>.json, print a table (`python -m bench.render` then writes
docs/benchmarks.md from them, `python -m bench.scaling_page` docs/scaling.md).

python -m bench.run [--only cold_start|control_plane|sweep|plan|api_properties|faults|fallback|local_e2e|bad_host|
                    checkpoint|scaling] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import (
    REPO_ROOT,
    RESULTS_DIR,
    api_properties,
    bad_host,
    checkpoint,
    cold_start,
    control_plane,
    fallback,
    faults,
    local_e2e,
    plan,
    scaling,
    sweep,
)
from bench.render import table as metrics_table

BENCHMARKS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    cold_start.NAME: lambda args: cold_start.run(args.runs),
    control_plane.NAME: lambda args: control_plane.run(),
    sweep.NAME: lambda args: sweep.run(),
    plan.NAME: lambda args: plan.run(),
    api_properties.NAME: lambda args: api_properties.run(),
    faults.NAME: lambda args: faults.run(),
    fallback.NAME: lambda args: fallback.run(),
    local_e2e.NAME: lambda args: local_e2e.run(),
    bad_host.NAME: lambda args: bad_host.run(),
    checkpoint.NAME: lambda args: checkpoint.run(),
    scaling.NAME: lambda args: scaling.run(),
}


def table(result: dict[str, Any]) -> str:
    """The result's metrics as a markdown table, under the bench's name and time."""
    return f"### {result['benchmark']} ({result['measured_at']})\n\n{metrics_table(result['metrics'])}"


def write(result: dict[str, Any]) -> str:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{result['benchmark']}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return str(path.relative_to(REPO_ROOT))


def in_own_process(name: str, runs: int) -> dict[str, Any]:
    """Bench `name` in a fresh interpreter: moto's state and the environment a bench sets are process-global, so
    a bench run after another in one process would find the first one's tables, jobs and variables."""
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        output = Path(tmp) / f"{name}.json"
        command = [sys.executable, "-m", "bench.run", "--here", name, "--runs", str(runs), "--output", str(output)]
        subprocess.run(command, cwd=REPO_ROOT, check=True)
        return dict(json.loads(output.read_text()))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=list(BENCHMARKS), action="append", help="run only this benchmark")
    parser.add_argument("--runs", type=int, default=cold_start.DEFAULT_RUNS, help="cold-start samples per candidate")
    parser.add_argument("--here", choices=list(BENCHMARKS), help=argparse.SUPPRESS)  # one bench, in this process
    parser.add_argument("--output", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.here:
        args.output.write_text(json.dumps(BENCHMARKS[args.here](args)))
        return
    started = time.perf_counter()
    tables = []
    for name in BENCHMARKS:
        if args.only and name not in args.only:
            continue
        began = time.perf_counter()
        result = in_own_process(name, args.runs)
        path = write(result)
        print(f"{name}: {time.perf_counter() - began:.1f}s -> {path}", flush=True)
        tables.append(table(result))
    print()
    print("\n\n".join(tables))
    print(f"\ntotal bench time: {time.perf_counter() - started:.1f}s")


if __name__ == "__main__":
    main()
