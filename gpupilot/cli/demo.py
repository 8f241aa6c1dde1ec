"""`gpupilot demo`: a local cloud of its own, the CUDA smoke job planned, run and followed through its fallbacks,
its cost shown."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpupilot.cli import local, render
from gpupilot.cli.arguments import (
    EXIT_JOB_FAILED,
    EXIT_OK,
    checked,
)
from gpupilot.cli.client import ApiClient
from gpupilot.cli.following import follow
from gpupilot.cli.jobs import submit_headers
from gpupilot.cli.ui import DEFAULT_PORT as CONSOLE_PORT

# The local cloud runs Batch's minutes in seconds (a pool is CREATING for 0.5 s, an instance boots in 0.4 s and
# is given 2 s to register), so the demo job is diagnosed after 6 s rather than the 15 minutes a deployed job
# waits by default: in a world whose first GPU type has no capacity, the demo shows the fallback in seconds.
DEMO_STUCK_AFTER_MINUTES = 0.1


DEMO_JOB: dict[str, Any] = {
    "name": "cuda-smoke",
    "image": "nvidia/cuda:12.4.1-base-ubuntu22.04",
    "command": ["nvidia-smi", "-L"],
    "gpus": 1,
    "stuck_after_minutes": DEMO_STUCK_AFTER_MINUTES,
}


# Beyond the demo job's own waits, per attempt (a pool to create, a queue to poll) and in all (start, cost).
DEMO_ATTEMPT_SLACK_SECONDS = 30.0
DEMO_SLACK_SECONDS = 60.0


# How the demo ends: where to look next, in a browser (the demo's own cloud stops with it).
CONSOLE_HINT = (
    "see jobs, timelines, costs and the fleet in the console: `gpupilot serve` in one terminal, `gpupilot ui` in "
    f"another, then open http://127.0.0.1:{CONSOLE_PORT}/"
)


def demo_wait_seconds(runtime_seconds: float, speedup: float) -> float:
    """How long the demo follows its job: every attempt it may make (each diagnosed after its stuck_after, then
    waited on a bounded number of times before it falls back), then its run."""
    from functions.shared.domain.diagnosis.runnable import MAX_WAIT_CHECKS
    from functions.shared.domain.requests.job_request import JobRequest

    attempts = DEMO_JOB.get("max_attempts") or JobRequest.model_fields["max_attempts"].default
    per_attempt = (1 + MAX_WAIT_CHECKS) * DEMO_STUCK_AFTER_MINUTES * 60 + DEMO_ATTEMPT_SLACK_SECONDS
    return float(attempts * per_attempt + runtime_seconds / speedup + DEMO_SLACK_SECONDS)


def demo(args: argparse.Namespace) -> int:
    """Start a local cloud, plan and run the CUDA smoke job, show it; with --json, one JSON document at the end:
    `{plan, job, log_file}` (the plan and the job as the API gives them)."""
    log_file = Path(".gpupilot/demo.log")
    say: Callable[[str], None] = (lambda _: None) if args.json else print
    say("GPU Pilot demo: starting the local cloud (embedded AWS, the stack's resources, the GpuJob workflow)")
    # Through the module, so that a test's stand-in for the start is the one called.
    cloud = local._start_cloud(args.world, "127.0.0.1", 0, args.speedup, 0, log_file)
    try:
        say(f"listening on {cloud.api_url}")
        say(f"aws endpoint {cloud.aws_url}")
        client = ApiClient(cloud.api_url)
        plan = checked(client.request("POST", "/plan", DEMO_JOB))
        say(render.plan_table(plan, top=3))
        submitted = checked(client.request("POST", "/jobs", DEMO_JOB, headers=submit_headers(None)))
        say(f"submitted {submitted['job_id']}: {' '.join(DEMO_JOB['command'])} on {DEMO_JOB['gpus']} GPU")
        limit = demo_wait_seconds(cloud.world.jobs.runtime_seconds, args.speedup)
        if args.json:
            with render.WaitProgress(plain=False) as progress:  # a live line on a terminal; else nothing
                job = follow(client, submitted["job_id"], say, limit_seconds=limit, on_poll=progress.update)
            print(json.dumps({"plan": plan, "job": job, "log_file": str(log_file)}, indent=2))
        else:
            job = follow(client, submitted["job_id"], say, limit_seconds=limit)
            say(render.job_summary(job))
            say(f"(handler logs: {log_file})")
            say(CONSOLE_HINT)
        return EXIT_OK if job["status"] == "SUCCEEDED" else EXIT_JOB_FAILED
    finally:
        cloud.stop()
