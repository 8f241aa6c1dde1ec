"""`gpupilot`: submit and watch GPU jobs, and run the local cloud.

Without --endpoint (or GPUPILOT_ENDPOINT) the CLI talks to the local cloud started by `gpupilot serve`.
Bad input exits 2 with one line; a job that ends FAILED exits 1.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import signal
import sys
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote

from gpupilot import render
from gpupilot.client import DEFAULT_LOCAL_ENDPOINT, ApiClient, ApiResponse, ApiUnreachable, InvalidEndpoint

FINISHED = {"SUCCEEDED", "FAILED", "CANCELLED"}
STOP_TIMEOUT_SECONDS = 5
SMOKE_IMAGE = "python:3.12-slim"
DEMO_JOB: dict[str, Any] = {
    "name": "cuda-smoke",
    "image": "nvidia/cuda:12.4.1-base-ubuntu22.04",
    "command": ["nvidia-smi", "-L"],
    "gpus": 1,
}


# Exit codes (README): the job's outcome when waited for, else whether the call worked.
EXIT_OK = 0
EXIT_JOB_FAILED = 1  # the job (or a sweep) ended FAILED or CANCELLED
EXIT_BAD_REQUEST = 2  # bad input: a flag, a file, or a 4xx from the API
EXIT_NOT_FOUND = 3  # no such job or sweep (404)
EXIT_SERVICE = 4  # the service failed or could not be reached (5xx, connection, time-out, a FAILED sweep)


class UsageError(Exception):
    """Bad input: exit 2 with one line."""


class NotFound(Exception):
    """The API has no such job or sweep: exit 3 with one line."""


class ServiceError(Exception):
    """The API failed or timed out: exit 4 with one line."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"gpupilot: {message}", file=sys.stderr)
        raise SystemExit(2)


def _job_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--file", help="JSON body of the request (flags override its fields)")
    parser.add_argument("--name")
    parser.add_argument("--image")
    parser.add_argument("--gpus", type=int)
    parser.add_argument("--min-gpu-memory-gib", type=float)
    parser.add_argument("--vcpus", type=int)
    parser.add_argument("--memory-gib", type=float)
    parser.add_argument("--gpu-model", action="append", dest="gpu_models", help="repeat, in preference order")
    parser.add_argument("--instance-type", action="append", dest="instance_types", help="repeat: allow-list")
    parser.add_argument("--capacity", choices=["on-demand", "spot", "spot-first"])
    parser.add_argument("--max-hourly-usd", type=float)
    parser.add_argument("--timeout-minutes", type=int)
    parser.add_argument("--stuck-after-minutes", type=float)
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--arch", choices=["x86_64", "arm64"])
    parser.add_argument("--zone", action="append", dest="zones", help="repeat: zones the job may run in")
    parser.add_argument("--max-attempts", type=int, help="GPU offerings tried at most (default 6)")
    parser.add_argument("--give-up-after-minutes", type=float, help="fail the job if not started by then")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command and its arguments")


ENDPOINT_HELP = f"API URL (default: GPUPILOT_ENDPOINT or {DEFAULT_LOCAL_ENDPOINT})"


def build_parser() -> Parser:
    parser = Parser(prog="gpupilot", description="Run CUDA jobs on GPUs that exist, and know why they wait.")
    parser.add_argument("--endpoint", help=ENDPOINT_HELP)
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    # The same flags after the command too (`gpupilot list --json`); SUPPRESS keeps the top-level value
    # when they are not repeated there.
    common = Parser(add_help=False)
    common.add_argument("--endpoint", default=argparse.SUPPRESS, help=ENDPOINT_HELP)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    commands = parser.add_subparsers(dest="action", required=True, parser_class=Parser)

    def command(name: str, help: str) -> argparse.ArgumentParser:
        return commands.add_parser(name, parents=[common], help=help)

    demo = command("demo", help="start the local cloud, run a CUDA job, show its cost")
    demo.add_argument("--world", help="world file (JSON) shaping the simulated AWS")
    demo.add_argument("--speedup", type=float, default=1.0, help="simulated job time runs this much faster")

    serve = command("serve", help="run the local cloud (embedded AWS + the API on loopback)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--world", help="world file (JSON) shaping the simulated AWS")
    serve.add_argument("--speedup", type=float, default=1.0, help="simulated job time runs this much faster")
    serve.add_argument("--sweep-seconds", type=float, default=300.0, help="health sweep period (0: off)")
    serve.add_argument("--log-file", default=".gpupilot/local-cloud.log", help="where handler logs go")

    submit = command("submit", help="submit a GPU job")
    _job_arguments(submit)
    submit.add_argument("--idempotency-key")
    submit.add_argument("--wait", action="store_true", help="follow the job until it ends")
    submit.add_argument(
        "--smoke",
        action="store_true",
        help=f"run GPU Pilot's CUDA smoke test (payloads/cuda_smoke.py in {SMOKE_IMAGE}) instead of a command",
    )

    plan = command("plan", help="rank GPU types for a request; launches nothing")
    _job_arguments(plan)

    status = command("status", help="show one job")
    status.add_argument("job_id")
    status.add_argument("--wait", action="store_true", help="follow the job until it ends")
    status.add_argument("--explain", action="store_true", help="diagnose why the job waits, now")

    listing = command("list", help="list jobs, newest first")
    listing.add_argument("--status")
    listing.add_argument("--limit", type=int, default=20)
    listing.add_argument("--next-token")

    cancel = command("cancel", help="cancel a job")
    cancel.add_argument("job_id")

    health = command("health", help="latest health sweep (or one by --sweep-id)")
    health.add_argument("--sweep-id")
    sweep = command("sweep", help="run a health sweep now, wait for it, print its report")
    sweep.add_argument("--timeout", type=float, default=300, help="seconds to wait for the report")
    costs = command("costs", help="what every ended attempt cost: per day, or grouped; --csv for one row each")
    costs.add_argument("--from", dest="date_from")
    costs.add_argument("--to", dest="date_to")
    costs.add_argument("--group-by", choices=["day", "gpu_type", "job_name", "capacity_type"])
    costs.add_argument("--csv", action="store_true", help="one CSV row per priced attempt")
    return parser


def smoke_body(body: dict[str, Any]) -> dict[str, Any]:
    """The request for the CUDA smoke test: the payload travels in the command (no image of our own)."""
    if body.get("command"):
        raise UsageError("--smoke runs the smoke test: give no command")
    return {"name": "cuda-smoke", "image": SMOKE_IMAGE} | body | {"command": smoke_command()}


def smoke_command() -> list[str]:
    """`python3 -c` with the smoke payload, compressed: it runs in any image with Python 3 and, on Batch's GPU
    AMI, the NVIDIA driver the container runtime mounts."""
    from payloads import cuda_smoke

    packed = base64.b64encode(zlib.compress(Path(cuda_smoke.__file__).read_bytes(), 9)).decode()
    return ["python3", "-c", f"import base64,zlib;exec(zlib.decompress(base64.b64decode('{packed}')))"]


def job_body(args: argparse.Namespace) -> dict[str, Any]:
    """The request body from --file and the flags; flags win."""
    body: dict[str, Any] = {}
    if args.file:
        try:
            body = json.loads(Path(args.file).read_text())
        except OSError as error:
            raise UsageError(f"cannot read --file {args.file}: {error.strerror}") from error
        except ValueError as error:
            raise UsageError(f"--file {args.file} is not valid JSON: {error}") from error
        if not isinstance(body, dict):
            raise UsageError(f"--file {args.file} must hold a JSON object")
    for field in (
        "name", "image", "gpus", "min_gpu_memory_gib", "vcpus", "memory_gib", "gpu_models", "instance_types",
        "capacity", "max_hourly_usd", "timeout_minutes", "stuck_after_minutes", "arch", "zones", "max_attempts",
        "give_up_after_minutes",
    ):  # fmt: skip
        value = getattr(args, field)
        if value is not None:
            body[field] = value
    # argparse keeps the separator; any later "--" belongs to the user's command.
    command = list(args.command or [])
    if command[:1] == ["--"]:
        command = command[1:]
    if command:
        body["command"] = command
    for pair in args.env:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--env {pair!r} must be NAME=VALUE")
        body.setdefault("environment", {})[name] = value
    return body


def _checked(response: ApiResponse) -> Any:
    if response.ok:
        return response.body
    if 400 <= response.status < 500:
        if response.status == 404:
            raise NotFound(response.error_line())
        raise UsageError(response.error_line())
    raise ServiceError(response.error_line())


def follow(
    client: ApiClient, job_id: str, out: Callable[[str], None], poll_seconds: float = 0.5, limit_seconds: float = 0
) -> dict[str, Any]:
    """Poll the job and print each new status, and each new reason while it waits, until it ends."""
    seen = 0
    reason = None
    started = time.monotonic()
    while True:
        job = _checked(client.request("GET", f"/jobs/{job_id}"))
        for entry in job["timeline"][seen:]:
            out(render.progress_line(entry, job))
        seen = len(job["timeline"])
        if job.get("reason") and job["reason"] != reason:
            out(render.reason_line(job["reason"], time.monotonic() - started))
        reason = job.get("reason")
        if job["status"] in FINISHED:
            return dict(job)
        if limit_seconds and time.monotonic() - started > limit_seconds:
            raise ServiceError(f"job {job_id} still {job['status']} after {limit_seconds:.0f} s")
        time.sleep(poll_seconds)


def wait_for_sweep(client: ApiClient, sweep_id: str, limit_seconds: float, poll_seconds: float = 0.5) -> dict[str, Any]:
    """The sweep's report once the sweep function has finished it."""
    started = time.monotonic()
    while True:
        report = _checked(client.request("GET", "/health", query={"sweep_id": sweep_id}))
        if report.get("status") != "RUNNING":
            return dict(report)
        if time.monotonic() - started > limit_seconds:
            raise ServiceError(f"sweep {sweep_id} still RUNNING after {limit_seconds:.0f} s")
        time.sleep(poll_seconds)


def run(args: argparse.Namespace) -> int:
    if args.action == "serve":
        return serve(args)
    if args.action == "demo":
        return demo(args)
    client = ApiClient(args.endpoint)
    emit = print
    if args.action in ("submit", "plan"):
        body = job_body(args)
        if getattr(args, "smoke", False):
            body = smoke_body(body)
        if args.action == "plan":
            result = _checked(client.request("POST", "/plan", body))
            emit(json.dumps(result, indent=2) if args.json else render.plan_table(result))
            return 0
        headers = {"Idempotency-Key": args.idempotency_key} if args.idempotency_key else None
        submitted = _checked(client.request("POST", "/jobs", body, headers=headers))
        if not args.wait:
            emit(json.dumps(submitted, indent=2) if args.json else render.submitted(submitted))
            return 0
        job = follow(client, quote(submitted["job_id"], safe=""), (lambda _: None) if args.json else emit)
        emit(json.dumps(job, indent=2) if args.json else render.job_summary(job))
        return EXIT_OK if job["status"] == "SUCCEEDED" else EXIT_JOB_FAILED
    job_path = f"/jobs/{quote(args.job_id, safe='')}" if hasattr(args, "job_id") else ""
    if args.action == "status":
        if args.wait:
            job = follow(client, quote(args.job_id, safe=""), (lambda _: None) if args.json else emit)
        else:
            job = _checked(client.request("GET", job_path, query={"explain": "true"} if args.explain else None))
        emit(json.dumps(job, indent=2) if args.json else render.job_summary(job))
        if args.wait:
            return EXIT_OK if job["status"] == "SUCCEEDED" else EXIT_JOB_FAILED
        return EXIT_OK
    if args.action == "list":
        query = {"status": args.status, "limit": args.limit, "next_token": args.next_token}
        result = _checked(client.request("GET", "/jobs", query=query))
        emit(json.dumps(result, indent=2) if args.json else render.job_list(result))
        return 0
    if args.action == "cancel":
        job = _checked(client.request("DELETE", job_path))
        emit(json.dumps(job, indent=2) if args.json else f"cancelled {job['job_id']} ({job['status']})")
        return 0
    if args.action == "health":
        report = _checked(client.request("GET", "/health", query={"sweep_id": args.sweep_id}))
        emit(json.dumps(report, indent=2) if args.json else render.health(report))
        return 0
    if args.action == "sweep":
        started = _checked(client.request("POST", "/sweep"))
        if not args.json:
            emit(f"sweep {started['sweep_id']} started; waiting for its report")
        report = wait_for_sweep(client, started["sweep_id"], args.timeout)
        emit(json.dumps(report, indent=2) if args.json else render.health(report))
        return EXIT_SERVICE if report.get("status") == "FAILED" else EXIT_OK
    if args.action == "costs":
        query = {"from": args.date_from, "to": args.date_to, "group_by": args.group_by}
        if args.csv:
            print(_checked(client.request("GET", "/costs", query=query, headers={"Accept": "text/csv"})), end="")
            return EXIT_OK
        report = _checked(client.request("GET", "/costs", query=query))
        emit(json.dumps(report, indent=2) if args.json else render.costs(report))
        return 0
    raise UsageError(f"unknown command {args.action}")


def _start_cloud(
    world_file: str | None, host: str, port: int, speedup: float, sweep_seconds: float, log_file: Path
) -> Any:
    from gpupilot.localcloud.world import WorldError, load_world

    try:
        world = load_world(world_file)
    except WorldError as error:
        raise UsageError(str(error)) from error
    if speedup <= 0:
        raise UsageError("--speedup must be greater than 0")
    log_file.parent.mkdir(parents=True, exist_ok=True)
    from gpupilot.localcloud.server import LocalCloud

    cloud = LocalCloud(world, host=host, port=port, speedup=speedup, sweep_seconds=sweep_seconds, log_file=log_file)
    try:
        return cloud.start()
    except OSError as error:
        cloud.stop()
        raise UsageError(f"cannot listen on {host}:{port}: {error.strerror or error}") from error


def serve(args: argparse.Namespace) -> int:
    cloud = _start_cloud(args.world, args.host, args.port, args.speedup, args.sweep_seconds, Path(args.log_file))
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
    return 0


def demo(args: argparse.Namespace) -> int:
    log_file = Path(".gpupilot/demo.log")
    print("GPU Pilot demo: starting the local cloud (embedded AWS, the stack's resources, the GpuJob workflow)")
    cloud = _start_cloud(args.world, "127.0.0.1", 0, args.speedup, 0, log_file)
    try:
        print(f"listening on {cloud.api_url}")
        print(f"aws endpoint {cloud.aws_url}")
        client = ApiClient(cloud.api_url)
        plan = _checked(client.request("POST", "/plan", DEMO_JOB))
        print(render.plan_table(plan, top=3))
        submitted = _checked(client.request("POST", "/jobs", DEMO_JOB))
        print(f"submitted {submitted['job_id']}: {' '.join(DEMO_JOB['command'])} on {DEMO_JOB['gpus']} GPU")
        job = follow(client, submitted["job_id"], print, limit_seconds=600)
        print(render.job_summary(job))
        print(f"(handler logs: {log_file})")
        return 0 if job["status"] == "SUCCEEDED" else 1
    finally:
        cloud.stop()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except (UsageError, InvalidEndpoint) as error:
        print(f"gpupilot: {error}", file=sys.stderr)
        return EXIT_BAD_REQUEST
    except NotFound as error:
        print(f"gpupilot: {error}", file=sys.stderr)
        return EXIT_NOT_FOUND
    except ApiUnreachable as error:
        hint = "" if args.endpoint else " (start the local cloud with `gpupilot serve`, or pass --endpoint)"
        print(f"gpupilot: {error}{hint}", file=sys.stderr)
        return EXIT_SERVICE
    except (ServiceError, RuntimeError) as error:
        print(f"gpupilot: {error}", file=sys.stderr)
        return EXIT_SERVICE


if __name__ == "__main__":
    sys.exit(main())
