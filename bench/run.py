"""Run the benchmarks (cold start, control plane, sweep, plan, API properties, faults, load), write
bench/results/<name>.json, print a table (`python -m bench.render` then writes docs/benchmarks.md from them).

python -m bench.run [--only cold_start|control_plane|sweep|plan|api_properties|faults|local_e2e] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from bench import REPO_ROOT, RESULTS_DIR, api_properties, cold_start, control_plane, faults, local_e2e, plan, sweep
from bench.render import table as metrics_table

BENCHMARKS: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    cold_start.NAME: lambda args: cold_start.run(args.runs),
    control_plane.NAME: lambda args: control_plane.run(),
    sweep.NAME: lambda args: sweep.run(),
    plan.NAME: lambda args: plan.run(),
    api_properties.NAME: lambda args: api_properties.run(),
    faults.NAME: lambda args: faults.run(),
    local_e2e.NAME: lambda args: local_e2e.run(),
}


def table(result: dict[str, Any]) -> str:
    """The result's metrics as a markdown table, under the bench's name and time."""
    return f"### {result['benchmark']} ({result['measured_at']})\n\n{metrics_table(result['metrics'])}"


def write(result: dict[str, Any]) -> str:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{result['benchmark']}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return str(path.relative_to(REPO_ROOT))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=list(BENCHMARKS), action="append", help="run only this benchmark")
    parser.add_argument("--runs", type=int, default=cold_start.DEFAULT_RUNS, help="cold-start samples per candidate")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    tables = []
    for name, benchmark in BENCHMARKS.items():
        if args.only and name not in args.only:
            continue
        began = time.perf_counter()
        result = benchmark(args)
        path = write(result)
        print(f"{name}: {time.perf_counter() - began:.1f}s -> {path}", flush=True)
        tables.append(table(result))
    print()
    print("\n\n".join(tables))
    print(f"\ntotal bench time: {time.perf_counter() - started:.1f}s")


if __name__ == "__main__":
    main()
