"""Checkpoint: long spot-first jobs through the local cloud, whose spot hosts are reclaimed mid-run, with checkpointing
against the same jobs without it, in one run (one local cloud, the jobs side by side).

Metrics: gpu_seconds_lost_per_reclaim (the GPU-seconds a job ran beyond its runtime, over its reclaims: the work a
reclaim made it do again) and reclaims_survived (the share of reclaims whose next attempt resumed from a checkpoint).

    python -m bench.checkpoint                                    # the result JSON
    python -m bench.checkpoint --scenario [--skip-restore] --output FILE
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

from bench import REPO_ROOT, at_least, at_most, emit, environment, metric, utc_now
from bench.local_api import get_json, post_json

NAME = "checkpoint"
JOBS = 2  # of each kind
SPEEDUP = 60
# Simulated seconds: a 20-minute job on spot hosts reclaimed 10 minutes after launch (the notice 2 minutes before),
# whose program writes a checkpoint every 5 minutes and when signalled.
RUNTIME_SECONDS, RECLAIM_AFTER_SECONDS, WRITES_EVERY_SECONDS, NOTICE_SECONDS = 1200, 600, 300, 120
SPOT_TYPE = "g6.xlarge"
WORLD: dict[str, Any] = {
    "instance_types": {SPOT_TYPE: {"zones": ["us-east-1a"]}},
    "spot": {SPOT_TYPE: {"interrupt_after_seconds": RECLAIM_AFTER_SECONDS, "hourly_usd": 0.35}},
    "jobs": {"runtime_seconds": RUNTIME_SECONDS, "checkpoint_every_seconds": WRITES_EVERY_SECONDS},
}
TIMEOUT_SECONDS = 240
METHOD = (
    "{jobs} spot-first jobs with checkpoint true and {jobs} without, submitted at once through the local cloud at "
    "--speedup {speedup}, whose world {world} reclaims every spot host {after} simulated seconds after its launch; "
    "each job falls back to on-demand after its reclaim. Per job, from GET /jobs/<id>: its reclaims (attempts with "
    "host terminations), the GPU-seconds its attempts ran (cost.runtime_seconds x gpus) beyond its runtime, and the "
    "reclaims whose next attempt shows resumed_from. Baseline: the jobs without checkpoint, same run"
)
SUMMARY = (
    "A spot reclaim mid-run: the GPU-seconds a job loses to it with checkpointing (the host agent signals the program "
    "on the notice, uploads what it wrote and restores it on the next attempt) against the same job without, and the "
    "share of reclaims the jobs survived. Goals: at most one checkpoint interval plus the notice's two minutes lost "
    "per reclaim, and every reclaim survived."
)
NOTES = (
    "Without a checkpoint the next attempt starts from zero: everything the reclaimed attempt ran is run again. With "
    "one, the program saves on the notice, so a reclaim costs the notice's two minutes (the program waits for the "
    "reclaim after it saved) plus the agent's polls and the restore before the program starts again."
)


def skip_restore() -> None:
    """A deliberately worse agent (the bench's own test): it never restores a checkpoint into the next attempt."""
    from host_agent import checkpoints

    checkpoints.restore = lambda *args, **kwargs: None


def lost_and_survived(job: dict[str, Any]) -> tuple[int, float, int]:
    """(reclaims, GPU-seconds run beyond the job's runtime, reclaims whose next attempt resumed from a checkpoint)."""
    attempts = job["attempts"]
    reclaims = sum(1 for a in attempts if a.get("host_terminations"))
    ran = sum(float(a["cost"]["runtime_seconds"]) * job["request"]["gpus"] for a in attempts if a.get("cost"))
    survived = sum(
        1 for before, after in pairwise(attempts) if before.get("host_terminations") and after["resumed_from"]
    )
    return reclaims, ran - RUNTIME_SECONDS * job["request"]["gpus"], survived


def measure(api: str, jobs: int, timeout: float) -> dict[str, Any]:
    body = {"name": "bench", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["python3", "train.py"],
            "capacity": "spot-first", "instance_types": [SPOT_TYPE]}  # fmt: skip
    ids = {kind: [post_json(f"{api}/jobs", body | {"name": f"bench-{kind}-{n}"} | extra)["job_id"] for n in range(jobs)]
           for kind, extra in (("checkpoint", {"checkpoint": True}), ("none", {}))}  # fmt: skip
    deadline = time.monotonic() + timeout
    finished: dict[str, dict[str, Any]] = {}
    waiting = [job_id for kind in ids.values() for job_id in kind]
    while len(finished) < len(waiting) and time.monotonic() < deadline:
        for job_id in waiting:
            if job_id not in finished:
                job = get_json(f"{api}/jobs/{job_id}")
                if job["status"] in ("SUCCEEDED", "FAILED", "CANCELLED"):
                    finished[job_id] = job
        time.sleep(1)
    found: dict[str, Any] = {}
    for kind, kind_ids in ids.items():
        done = [finished[j] for j in kind_ids if j in finished and finished[j]["status"] == "SUCCEEDED"]
        counted = [lost_and_survived(job) for job in done]
        reclaims = sum(c[0] for c in counted)
        found[kind] = {
            "jobs": len(kind_ids), "succeeded": len(done), "reclaims": reclaims,
            "gpu_seconds_lost": round(sum(c[1] for c in counted), 1), "survived": sum(c[2] for c in counted),
            "progress_lost_seconds": [a.get("progress_lost_seconds") for job in done for a in job["attempts"]
                                      if a.get("host_terminations")],
        }  # fmt: skip
    return found


def scenario(jobs: int = JOBS, restore: bool = True, timeout: float = TIMEOUT_SECONDS) -> dict[str, Any]:
    from gpupilot.localcloud.server import LocalCloud
    from gpupilot.localcloud.world import World

    if not restore:
        skip_restore()
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        cloud = LocalCloud(World.model_validate(WORLD), port=0, speedup=SPEEDUP, sweep_seconds=0,
                           log_file=Path(tmp) / "bench.log").start()  # fmt: skip
        try:
            return measure(cloud.api_url, jobs, timeout)
        finally:
            cloud.stop()


def in_own_process(jobs: int = JOBS, restore: bool = True, timeout: float = TIMEOUT_SECONDS) -> dict[str, Any]:
    """moto's state is global to a process: each scenario runs in a fresh interpreter."""
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        output = Path(tmp) / "scenario.json"
        command = [sys.executable, "-m", "bench.checkpoint", "--scenario", "--output", str(output), "--jobs", str(jobs),
                   *([] if restore else ["--skip-restore"]), "--timeout", str(timeout)]  # fmt: skip
        subprocess.run(command, cwd=REPO_ROOT, check=True, timeout=timeout + 180, stdout=subprocess.DEVNULL)
        return dict(json.loads(output.read_text()))


def per_reclaim(found: dict[str, Any]) -> float:
    if not found["reclaims"]:
        # A figure never stands in for one not measured.
        raise RuntimeError(f"no reclaim measured: {found}")
    return float(found["gpu_seconds_lost"]) / found["reclaims"]


def run(jobs: int = JOBS) -> dict[str, Any]:
    found = in_own_process(jobs)
    with_checkpoint, without = found["checkpoint"], found["none"]
    survived = with_checkpoint["survived"] / max(1, with_checkpoint["reclaims"])
    return {
        "benchmark": NAME,
        "measured_at": utc_now(),
        "summary": SUMMARY,
        "notes": NOTES,
        "method": METHOD.format(jobs=jobs, speedup=SPEEDUP, world=WORLD, after=RECLAIM_AFTER_SECONDS),
        "environment": environment(),
        "metrics": {
            "gpu_seconds_lost_per_reclaim": metric(
                per_reclaim(with_checkpoint),
                "GPU-s",
                per_reclaim(without),
                digits=1,
                goal=at_most(WRITES_EVERY_SECONDS + NOTICE_SECONDS),
            ),
            "reclaims_survived": metric(survived, "share", 1.0, goal=at_least(1.0)),
        },
        "details": found,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", action="store_true", help="run one scenario here: its JSON")
    parser.add_argument("--jobs", type=int, default=JOBS)
    parser.add_argument("--skip-restore", action="store_true", help="a worse agent that never restores")
    parser.add_argument("--output", type=Path)
    parser.add_argument("--timeout", type=float, default=TIMEOUT_SECONDS, help="seconds to wait for the jobs")
    args = parser.parse_args(argv)
    found = scenario(args.jobs, not args.skip_restore, args.timeout) if args.scenario else run(args.jobs)
    emit(found, args.output)


if __name__ == "__main__":
    main()
