"""Faults: jobs through the local cloud with every fault of the world file at once (throttled AWS calls, every
Batch event dropped, some duplicated and reordered, Lambda service errors), against the same jobs without
faults in the same run.

Metrics: jobs_submitted (accepted of those sent), jobs_not_terminal and records_lost (goal 0; a record is lost
when it is missing or says what Batch does not), records_duplicated (goal 0), and the wall time of the run
with faults against the one without.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import REPO_ROOT, environment, metric, utc_now

NAME = "faults"
JOBS = 10
SWEEP_SECONDS = 3.0
TIMEOUT_SECONDS = 600
FAULTS: dict[str, Any] = {
    "throttle": {"batch": 0.3, "ec2": 0.3, "dynamodb": 0.3, "stepfunctions": 0.3},
    "events": {"drop": 1.0, "duplicate": 0.2, "reorder": True},
    "lambda_errors": 0.1,
    "seed": 20261123,
}


def scenario(faults: dict[str, Any] | None) -> tuple[dict[str, Any], float, dict[str, int]]:
    from gpupilot.localcloud.server import LocalCloud
    from gpupilot.localcloud.world import World
    from tests.e2e.faults.drive import run_jobs

    world = World.model_validate({"jobs": {"runtime_seconds": 1}} | ({"faults": faults} if faults else {}))
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        cloud = LocalCloud(world, port=0, sweep_seconds=SWEEP_SECONDS, log_file=Path(tmp) / "bench.log").start()
        try:
            started = time.perf_counter()
            accounting = run_jobs(cloud.api_url, cloud.aws_url, JOBS, "bench", TIMEOUT_SECONDS)
            wall = time.perf_counter() - started
            injected = dict(cloud.faults.injected) if cloud.faults else {}
        finally:
            cloud.stop()
    return accounting.summary(), wall, injected


def _in_own_process(with_faults: bool) -> tuple[dict[str, Any], float, dict[str, int]]:
    """moto's state is global to a process: each scenario runs in a fresh interpreter."""
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        output = Path(tmp) / "scenario.json"
        command = [sys.executable, "-m", "bench.faults", "--output", str(output)]
        subprocess.run([*command, *(["--faults"] if with_faults else [])], cwd=REPO_ROOT, check=True,
                       timeout=TIMEOUT_SECONDS + 120, stdout=subprocess.DEVNULL)  # fmt: skip
        summary, wall, injected = json.loads(output.read_text())
    return summary, wall, injected


def run() -> dict[str, Any]:
    calm, calm_wall, _ = _in_own_process(with_faults=False)
    faulty, faulty_wall, injected = _in_own_process(with_faults=True)
    submitted = max(faulty["accepted"], 1)
    return {
        "benchmark": NAME,
        "measured_at": utc_now(),
        "method": f"{JOBS} jobs (1 s runtime each), each POSTed with an Idempotency-Key and retried on 5xx/409, "
        f"through the local cloud with the world's faults {FAULTS} and a sweep every {SWEEP_SECONDS:g} s, then "
        "every record checked against Batch and for duplicates; baseline: the same jobs without faults, same run",
        "environment": environment(),
        "metrics": {
            "jobs_submitted": metric(faulty["accepted"], "jobs", JOBS),
            "jobs_not_terminal": metric(len(faulty["not_terminal"]), "jobs", submitted),
            "records_lost": metric(len(faulty["lost"]), "records", submitted),
            "records_duplicated": metric(len(faulty["duplicated"]), "records", submitted),
            "wall_seconds_vs_no_faults": metric(faulty_wall, "s", calm_wall, digits=1),
        },
        "details": {"with_faults": faulty, "without_faults": calm, "faults_injected": injected},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="one scenario of the fault benchmark, as JSON")
    parser.add_argument("--faults", action="store_true", help="with the world's faults")
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    args.output.write_text(json.dumps(scenario(FAULTS if args.faults else None)))


if __name__ == "__main__":
    main()
