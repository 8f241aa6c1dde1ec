"""Faults: jobs through the local cloud with every fault of the world file at once (throttled AWS calls, every
Batch event dropped, some duplicated and reordered, Lambda service errors), against the same jobs without
faults in the same run.

Metrics: jobs_submitted (accepted of those sent), jobs_not_terminal and records_lost (goal 0; a record is lost
when it is missing or says what Batch does not: an end Batch recorded and the record missed, or a success Batch
does not know), records_duplicated (goal 0), and the wall time of the run with faults against the one without.

    python -m bench.faults                                                  # the result JSON
    python -m bench.faults --scenario [--faults all|events] [--jobs N] [--no-reconcile] --output FILE
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

from bench import REPO_ROOT, at_least, at_most, emit, environment, metric, utc_now

NAME = "faults"
JOBS = 10
SWEEP_SECONDS = 3.0
TIMEOUT_SECONDS = 600
# The jobs' start wait outlasts the run: a job the events miss is moved on by the sweep's replay, never by the
# stuck-job diagnosis, which would otherwise rescue it after its stuck_after and hide a sweep that no longer replays.
STUCK_AFTER_MINUTES = 30.0
FAULTS: dict[str, Any] = {
    "throttle": {"batch": 0.3, "ec2": 0.3, "dynamodb": 0.3, "stepfunctions": 0.3},
    "events": {"drop": 1.0, "duplicate": 0.2, "reorder": True},
    "lambda_errors": 0.1,
    "seed": 20261123,
}
# Only what the sweep's reconciliation answers for: every Batch event dropped.
EVENTS_DROPPED: dict[str, Any] = {"events": {"drop": 1.0}, "seed": FAULTS["seed"]}
PROFILES = {"all": FAULTS, "events": EVENTS_DROPPED}
SUMMARY = (
    "Every fault the world file can inject at once (throttled AWS calls, every Batch event dropped, some duplicated "
    "and reordered, Lambda service errors): every job must still end, with a record Batch agrees with, none lost "
    "or duplicated (goal: 0 each), the sweep making the dropped events harmless."
)
NOTES = (
    "With every event dropped the sweep is what moves each job on (within one interval per step). The run's extra "
    "time is mostly botocore's backoff on throttled calls, and heavy-tailed: two runs on 2026-11-23 took 43 s and "
    "76 s with faults, against 10 s to 11 s without. 2026-11-24: the run before accepted 9 of 10 jobs: one POST "
    "gave up after the bench's 20 tries half a second apart. Two causes. The bench's client ignored Retry-After, "
    "so a key held IN_PROGRESS (Powertools holds it until the call in progress would have timed out: the api "
    "function's timeout, which the local cloud now counts down as Lambda does) outlasted its 10 s; it now submits "
    "through gpupilot.cli.client as the CLI does (Retry-After honoured, for 30 s) and runs the submit again with the "
    "same key when that gives up. And behind it a product bug: a keyed submit that recorded and started its job but "
    "could not complete its idempotency record (its UpdateItem throttled past botocore's retries, or a Lambda "
    "error after the write) left the key in progress, and once that expired the retry made a second job. A keyed "
    "submit's job id now derives from its key and body, so the retry finds that job, starts it if it had not "
    "started, and answers it."
)


def without_reconciliation() -> None:
    """A deliberately worse sweep (the bench's own test): it lists Batch's jobs but never brings a record up to
    date with them (no missed event recorded, no parked workflow resumed)."""
    from functions.shared.usecases.health import jobs as sweep_jobs

    def vanished_only(events: Any, ports: Any, along: Any = ()) -> tuple[int, list[bool]]:
        return 0, ports.jobs.write_many(list(along)) if along else []

    sweep_jobs.replay_batch_events = vanished_only  # type: ignore[assignment]
    sweep_jobs.resume = lambda *args, **kwargs: []  # type: ignore[assignment]


def scenario(
    faults: dict[str, Any] | None, jobs: int = JOBS, timeout: float = TIMEOUT_SECONDS, reconcile: bool = True
) -> tuple[dict[str, Any], float, dict[str, int]]:
    from gpupilot.localcloud.server import LocalCloud
    from gpupilot.localcloud.world import World
    from tests.e2e.faults.drive import run_jobs

    if not reconcile:
        without_reconciliation()
    world = World.model_validate({"jobs": {"runtime_seconds": 1}} | ({"faults": faults} if faults else {}))
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        cloud = LocalCloud(world, port=0, sweep_seconds=SWEEP_SECONDS, log_file=Path(tmp) / "bench.log").start()
        try:
            started = time.perf_counter()
            accounting = run_jobs(cloud.api_url, cloud.aws_url, jobs, "bench", timeout, STUCK_AFTER_MINUTES)
            wall = time.perf_counter() - started
            injected = dict(cloud.faults.injected) if cloud.faults else {}
        finally:
            cloud.stop()
    return accounting.summary(), wall, injected


def in_own_process(
    faults: str | None, jobs: int = JOBS, timeout: float = TIMEOUT_SECONDS, reconcile: bool = True
) -> tuple[dict[str, Any], float, dict[str, int]]:
    """moto's state is global to a process: each scenario (`faults`: a PROFILES name, or None) runs in a fresh
    interpreter."""
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        output = Path(tmp) / "scenario.json"
        command = [sys.executable, "-m", "bench.faults", "--scenario", "--output", str(output), "--jobs", str(jobs),
                   "--timeout", f"{timeout:g}", *(["--faults", faults] if faults else []),
                   *([] if reconcile else ["--no-reconcile"])]  # fmt: skip
        subprocess.run(command, cwd=REPO_ROOT, check=True, timeout=timeout + 120, stdout=subprocess.DEVNULL)
        summary, wall, injected = json.loads(output.read_text())
    return summary, wall, injected


def run(jobs: int = JOBS) -> dict[str, Any]:
    from tests.e2e.faults.drive import DIAGNOSED

    calm, calm_wall, _ = in_own_process(None, jobs=jobs)
    faulty, faulty_wall, injected = in_own_process("all", jobs=jobs)
    submitted = max(faulty["accepted"], 1)
    return {
        "benchmark": NAME,
        "measured_at": utc_now(),
        "summary": SUMMARY,
        "notes": NOTES,
        "method": f"{jobs} jobs (1 s runtime each, stuck_after_minutes {STUCK_AFTER_MINUTES:g}: longer than the run, "
        "so no stuck-job diagnosis can stand in for the sweep), each POSTed with an Idempotency-Key and retried on "
        f"5xx/409, through the local cloud with the world's faults {FAULTS} and a sweep every {SWEEP_SECONDS:g} s, "
        "then every record checked against Batch (a record lost: missing, not finished while Batch ended its job, or "
        "SUCCEEDED while Batch says otherwise) and for duplicates, and each finished job's execution history read "
        "for how it got past its waits (details.with_faults.finished_by: every wait resumed, or a start wait timed "
        "out and diagnosed); baseline: the same jobs without faults, same run",
        "environment": environment(),
        "metrics": {
            "jobs_submitted": metric(faulty["accepted"], "jobs", jobs, goal=at_least(jobs)),
            "jobs_not_terminal": metric(len(faulty["not_terminal"]), "jobs", submitted, goal=at_most(0)),
            "records_lost": metric(len(faulty["lost"]), "records", submitted, goal=at_most(0)),
            "records_duplicated": metric(len(faulty["duplicated"]), "records", submitted, goal=at_most(0)),
            # Finished by the stuck-job diagnosis rather than by the sweep: none, as the start wait outlasts the run.
            "jobs_finished_by_diagnosis": metric(
                faulty["finished_by"].get(DIAGNOSED, 0), "jobs", submitted, goal=at_most(0)
            ),
            "wall_seconds_vs_no_faults": metric(faulty_wall, "s", calm_wall, digits=1),
        },
        "details": {"with_faults": faulty, "without_faults": calm, "faults_injected": injected},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", action="store_true", help="run one scenario here: its JSON")
    parser.add_argument("--faults", choices=sorted(PROFILES), help="the scenario with these of the world's faults")
    parser.add_argument("--jobs", type=int, default=JOBS)
    parser.add_argument("--timeout", type=float, default=TIMEOUT_SECONDS, help="seconds the jobs have to end")
    parser.add_argument(
        "--no-reconcile",
        action="store_true",
        help="a deliberately worse sweep that never reconciles a record with Batch (the bench's own test)",
    )
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    if args.scenario:
        faults = PROFILES[args.faults] if args.faults else None
        found: Any = scenario(faults, args.jobs, args.timeout, not args.no_reconcile)
    else:
        found = run(args.jobs)
    emit(found, args.output)


if __name__ == "__main__":
    main()
