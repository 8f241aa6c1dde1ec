"""`gpupilot serve` and `gpupilot demo`: the commands that run a local cloud of their own (the demo's run is
gpupilot.cli.demo)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from gpupilot.cli.arguments import (
    CommandAdder,
    UsageError,
    port_number,
    positive_number,
    seconds_or_zero,
)

STOP_TIMEOUT_SECONDS = 5


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
    from gpupilot.localcloud import botocore_data
    from gpupilot.localcloud.world import WorldError, load_world

    botocore_data.share()  # before the world is checked: that imports moto's EC2, whose regions take three sessions
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
