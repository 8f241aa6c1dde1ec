"""`gpupilot serve` and `gpupilot demo`: the commands that run a local cloud of their own."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpupilot.cli import render
from gpupilot.cli.arguments import (
    EXIT_JOB_FAILED,
    EXIT_OK,
    CommandAdder,
    UsageError,
    checked,
    port_number,
    positive_number,
    seconds_or_zero,
)
from gpupilot.cli.client import ApiClient
from gpupilot.cli.jobs import follow, submit_headers
from gpupilot.cli.ui import DEFAULT_PORT as CONSOLE_PORT

STOP_TIMEOUT_SECONDS = 5


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


LOCAL_COMMANDS = {
    "demo": "demo runs its own local cloud: --endpoint is refused (against a deployed API, try "
    "`gpupilot --endpoint URL submit --smoke --wait`)",
    "serve": "serve runs the local cloud: --endpoint is refused (it is for the commands that call an API)",
}


# One or more example invocations per command, shown by `gpupilot COMMAND --help`.
EXAMPLES = {
    "demo": """
  gpupilot demo                                   # start the local cloud, run a CUDA job, show its cost
  gpupilot demo --world world.json --speedup 10   # the same in a world of your own, 10x faster
  gpupilot demo --json > demo.json                # one JSON document at the end: {plan, job, log_file}""",
    "serve": """
  gpupilot serve                                  # API on http://127.0.0.1:8765, AWS on any free port
  gpupilot serve --port 9000 --aws-port 5000 --world world.json --speedup 60 --sweep-seconds 30
  gpupilot serve --port 0 --verbose               # any free port; server logs on the console too
  gpupilot serve --timings deployed               # a deployment's graces and deadlines, clock advanced""",
}


def add_commands(command: CommandAdder) -> None:
    """The `demo` and `serve` commands and their flags."""
    demo = command("demo", help="start the local cloud, run a CUDA job, show its cost")
    demo.add_argument("--world", help="world file (JSON) shaping the simulated AWS (default: every GPU type works)")
    demo.add_argument(
        "--speedup", type=positive_number, default=1.0, help="simulated job time runs this much faster (default 1)"
    )

    serve = command("serve", help="run the local cloud (embedded AWS + the API on loopback)")
    serve.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=port_number, default=8765, help="the API's port (0: any free port; default 8765)")
    serve.add_argument(
        "--aws-port", type=port_number, default=0, help="the embedded AWS endpoint's port (default 0: any free port)"
    )
    serve.add_argument("--world", help="world file (JSON) shaping the simulated AWS (default: every GPU type works)")
    serve.add_argument(
        "--speedup",
        type=positive_number,
        default=1.0,
        help="simulated time runs this much faster: jobs' runtimes and the workflow's waits (default 1)",
    )
    serve.add_argument(
        "--sweep-seconds",
        type=seconds_or_zero,
        default=300.0,
        help="health sweep period, seconds of the local cloud's clock (0: off; default 300)",
    )
    serve.add_argument(
        "--timings",
        choices=["local", "deployed"],
        default="local",
        help="local (default): the functions' grace periods, pool poll and provisioning deadline shortened to the "
        "local cloud's seconds; deployed: the values a deployment runs with (10-minute graces, a 10 s poll, a "
        "30-minute deadline), played out by advancing the local cloud's clock (POST /local/clock)",
    )
    serve.add_argument(
        "--log-file",
        default=".gpupilot/local-cloud.log",
        help="where the handlers' and the server's logs go (default .gpupilot/local-cloud.log)",
    )
    serve.add_argument(
        "--verbose", action="store_true", help="also show the server's logs (requests, the embedded AWS) on stderr"
    )


def _check_port(host: str, port: int, flag: str) -> None:
    """Refuse at once a host or port the local cloud could not listen on (before seconds of start-up)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As the servers themselves bind: a port left in TIME_WAIT by a previous run is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            where = f"{host}:{port}" if port else host
            raise UsageError(f"cannot listen on {where} ({flag}): {error.strerror or error}", field=flag) from error


def _start_cloud(
    world_file: str | None,
    host: str,
    port: int,
    speedup: float,
    sweep_seconds: float,
    log_file: Path,
    aws_port: int = 0,
    verbose: bool = False,
    timings: str = "local",
) -> Any:
    from gpupilot.localcloud.world import WorldError, load_world

    try:
        world = load_world(world_file)
    except WorldError as error:
        raise UsageError(str(error), field="--world") from error
    if not (math.isfinite(speedup) and speedup > 0):
        raise UsageError("--speedup must be greater than 0", field="--speedup")
    if not (math.isfinite(sweep_seconds) and sweep_seconds >= 0):
        raise UsageError("--sweep-seconds must be 0 (off) or more", field="--sweep-seconds")
    try:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        log_file.open("a").close()
    except OSError as error:
        raise UsageError(
            f"cannot write --log-file {log_file}: {error.strerror or error}", field="--log-file"
        ) from error
    _check_port(host, 0, "--host")
    if port and port == aws_port:
        raise UsageError(f"--aws-port must differ from --port ({port})", field="--aws-port")
    if port:
        _check_port(host, port, "--port")
    if aws_port:
        _check_port(host, aws_port, "--aws-port")
    from gpupilot.localcloud.logging_setup import configure_logging
    from gpupilot.localcloud.server import LocalCloud

    configure_logging(log_file, verbose=verbose)
    cloud = LocalCloud(
        world,
        host=host,
        port=port,
        aws_port=aws_port,
        speedup=speedup,
        sweep_seconds=sweep_seconds,
        log_file=log_file,
        timings=timings,
    )
    try:
        return cloud.start()
    except OSError as error:
        cloud.stop()
        raise UsageError(f"cannot listen on {host}:{port}: {error.strerror or error}") from error


def serve(args: argparse.Namespace) -> int:
    cloud = _start_cloud(
        args.world,
        args.host,
        args.port,
        args.speedup,
        args.sweep_seconds,
        Path(args.log_file),
        aws_port=args.aws_port,
        verbose=args.verbose,
        timings=args.timings,
    )
    print(f"listening on {cloud.api_url}", flush=True)
    print(f"aws endpoint {cloud.aws_url}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        stop.wait()
    # Stopping waits on server threads; never let one of them keep a Ctrl-C'd server alive.
    stopper = threading.Thread(target=cloud.stop, daemon=True)
    stopper.start()
    stopper.join(timeout=STOP_TIMEOUT_SECONDS)
    # Stopped: what is left is the interpreter tearing down the embedded AWS's objects one by one, a second of
    # work that nothing reads. Logs and output are flushed, then the process ends.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


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
    cloud = _start_cloud(args.world, "127.0.0.1", 0, args.speedup, 0, log_file)
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
