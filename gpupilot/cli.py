"""`gpupilot`: submit and watch GPU jobs, and run the local cloud.

Without --endpoint (or GPUPILOT_ENDPOINT) the CLI talks to the local cloud started by `gpupilot serve`.
Bad input exits 2 with one line (with --json: one JSON object) on stderr; a job that ends FAILED exits 1.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import logging
import math
import os
import re
import signal
import socket
import sys
import threading
import time
import uuid
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote, urlsplit

from gpupilot import render
from gpupilot.client import (
    DEFAULT_LOCAL_ENDPOINT,
    IDEMPOTENCY_HEADER,
    IN_PROGRESS,
    LOOPBACK_HOSTS,
    ApiClient,
    ApiResponse,
    ApiUnreachable,
    InvalidEndpoint,
    StillInProgress,
)

FINISHED = {"SUCCEEDED", "FAILED", "CANCELLED"}
STOP_TIMEOUT_SECONDS = 5
SMOKE_IMAGE = "python:3.12-slim"
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
LOCAL_COMMANDS = {
    "demo": "demo runs its own local cloud: --endpoint is refused (against a deployed API, try "
    "`gpupilot --endpoint URL submit --smoke --wait`)",
    "serve": "serve runs the local cloud: --endpoint is refused (it is for the commands that call an API)",
}


# Exit codes (README): the job's outcome when waited for, else whether the call worked.
EXIT_OK = 0
EXIT_JOB_FAILED = 1  # the job (or a sweep) ended FAILED or CANCELLED
EXIT_BAD_REQUEST = 2  # bad input: a flag, a file, or a 4xx from the API
EXIT_NOT_FOUND = 3  # no such job or sweep (404)
EXIT_SERVICE = 4  # the service failed or could not be reached (5xx, connection, time-out, a FAILED sweep)
EXIT_INTERRUPTED = 130  # Ctrl-C (the shell's convention for SIGINT)


class CliError(Exception):
    """A refusal or failure reported as one line on stderr (with --json, one JSON object) and an exit code.

    `str(error)` is the line; `kind` names the error (the API's own `error` when the API refused), `field` the
    flag or request field at fault when known, `message` the explanation without the kind and field."""

    exit_code = EXIT_SERVICE
    default_kind = "Error"

    def __init__(
        self,
        line: str,
        *,
        kind: str | None = None,
        field: str | None = None,
        message: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(line)
        self.kind = kind or self.default_kind
        self.field = field
        self.message = message or line
        self.details = details or {}


class UsageError(CliError):
    """Bad input: exit 2 with one line."""

    exit_code = EXIT_BAD_REQUEST
    default_kind = "UsageError"


class NotFound(CliError):
    """The API has no such job or sweep: exit 3 with one line."""

    exit_code = EXIT_NOT_FOUND
    default_kind = "NotFound"


class ServiceError(CliError):
    """The API failed or timed out: exit 4 with one line."""

    exit_code = EXIT_SERVICE
    default_kind = "ServiceError"


class Interrupted(CliError):
    """Ctrl-C: no traceback; a followed job keeps running."""

    exit_code = EXIT_INTERRUPTED
    default_kind = "Interrupted"


def report(error: CliError, json_errors: bool) -> int:
    """Say what went wrong on stderr, in one line or one JSON object; the exit code to end with."""
    if json_errors:
        shown = {"error": error.kind, "message": error.message, "field": error.field, "exit_code": error.exit_code}
        print(json.dumps(shown | error.details), file=sys.stderr)
    else:
        print("gpupilot: " + " ".join(str(error).splitlines()), file=sys.stderr)
    return error.exit_code


def wants_json(argv: list[str]) -> bool:
    """--json among the CLI's own arguments (not after the `--` that starts a job's command)."""
    own = argv[: argv.index("--")] if "--" in argv else argv
    return "--json" in own


class Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, json_errors: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.json_errors = json_errors

    def error(self, message: str) -> NoReturn:
        named = re.match(r"argument ([^:]+): ", message)
        field = named.group(1).split("/")[-1] if named else None
        raise SystemExit(report(UsageError(message, field=field), self.json_errors))


def port_number(value: str) -> int:
    """A TCP port for --port and --aws-port: 0 (any free port) to 65535."""
    try:
        port = int(value)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 0 to 65535 (0: any free port), not {value!r}")
    return port


def positive_number(value: str) -> float:
    """A finite number greater than 0."""
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number > 0):
        raise argparse.ArgumentTypeError(f"must be a number greater than 0, not {value!r}")
    return number


def seconds_or_zero(value: str) -> float:
    """A finite number of seconds, 0 or more."""
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number >= 0):
        raise argparse.ArgumentTypeError(f"must be a number of seconds, 0 or more, not {value!r}")
    return number


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
    parser.add_argument(
        "--price-band", type=float, help="fallbacks within this multiple of the cheapest candidate's price (default 3)"
    )
    parser.add_argument("--timeout-minutes", type=int)
    parser.add_argument("--stuck-after-minutes", type=float)
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--arch", choices=["x86_64", "arm64"])
    parser.add_argument("--zone", action="append", dest="zones", help="repeat: zones the job may run in")
    parser.add_argument("--region", action="append", dest="regions", help="repeat: capacity regions the job may run in")
    parser.add_argument("--max-attempts", type=int, help="GPU offerings tried at most (default 6)")
    parser.add_argument("--give-up-after-minutes", type=float, help="fail the job if not started by then")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command and its arguments")


ENDPOINT_HELP = f"API URL (default: GPUPILOT_ENDPOINT or {DEFAULT_LOCAL_ENDPOINT})"
LOCAL_ENDPOINT_HELP = "refused here (exit 2): this command runs its own local cloud"
JSON_HELP = "machine-readable output (errors too: one JSON object on stderr)"

# One or more example invocations per command, shown by `gpupilot COMMAND --help`.
EXAMPLES = {
    "demo": """
  gpupilot demo                                   # start the local cloud, run a CUDA job, show its cost
  gpupilot demo --world world.json --speedup 10   # the same in a world of your own, 10x faster
  gpupilot demo --json > demo.json                # one JSON document at the end: {plan, job, log_file}""",
    "serve": """
  gpupilot serve                                  # API on http://127.0.0.1:8765, AWS on any free port
  gpupilot serve --port 9000 --aws-port 5000 --world world.json --speedup 60 --sweep-seconds 30
  gpupilot serve --port 0 --verbose               # any free port; server logs on the console too""",
    "submit": """
  gpupilot submit --name train --image my/cuda:tag --gpus 1 --gpu-model L4 --gpu-model A10G --wait -- python train.py
  gpupilot submit --file job.json --idempotency-key nightly-2026-11-23   # safe to retry: one job per key
  gpupilot submit --smoke --gpus 1 --wait         # GPU Pilot's CUDA smoke test as a job""",
    "plan": """
  gpupilot plan --name train --image my/cuda:tag --gpus 4 -- python train.py
  gpupilot --json plan --file job.json --capacity spot-first""",
    "status": """
  gpupilot status JOB_ID                          # the job, its GPU type, cost and timeline
  gpupilot status JOB_ID --wait                   # follow it until it ends (exit 0 SUCCEEDED, 1 otherwise)
  gpupilot status JOB_ID --explain                # why is it still RUNNABLE? diagnosed now""",
    "list": """
  gpupilot list
  gpupilot list --status RUNNABLE --limit 50
  gpupilot --json list --next-token TOKEN""",
    "cancel": """
  gpupilot cancel JOB_ID""",
    "health": """
  gpupilot health                                 # the latest health sweep
  gpupilot health --sweep-id SWEEP_ID""",
    "sweep": """
  gpupilot sweep                                  # start a health sweep, wait for its report, print it
  gpupilot --json sweep --timeout 120""",
    "costs": """
  gpupilot costs --from 2026-11-01 --to 2026-11-30
  gpupilot costs --group-by gpu_type
  gpupilot costs --csv > costs.csv                # one row per priced attempt""",
}
TOP_EXAMPLES = """
  gpupilot serve &
  gpupilot submit --name train --image my/cuda:tag --gpus 1 --wait -- python train.py
  gpupilot --endpoint https://abc.execute-api.us-east-1.amazonaws.com/v1 list

exit codes: 0 done (--wait: the job SUCCEEDED), 1 the job ended FAILED or CANCELLED, 2 bad input or a 4xx,
3 no such job or sweep, 4 the service failed or could not be reached; `gpupilot COMMAND --help` for more."""


def build_parser(json_errors: bool = False) -> Parser:
    parser = Parser(
        prog="gpupilot",
        description="Run CUDA jobs on GPUs that exist, and know why they wait.",
        epilog="Examples:" + TOP_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        json_errors=json_errors,
    )
    parser.add_argument("--endpoint", help=ENDPOINT_HELP)
    parser.add_argument("--json", action="store_true", help=JSON_HELP)
    # The same flags after the command too (`gpupilot list --json`); SUPPRESS keeps the top-level value
    # when they are not repeated there.
    common = Parser(add_help=False)
    common.add_argument("--endpoint", default=argparse.SUPPRESS, help=ENDPOINT_HELP)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=JSON_HELP)
    local = Parser(add_help=False)  # demo and serve: their cloud is their own
    local.add_argument("--endpoint", default=argparse.SUPPRESS, help=LOCAL_ENDPOINT_HELP)
    local.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=JSON_HELP)
    commands = parser.add_subparsers(dest="action", required=True, parser_class=Parser)

    def command(name: str, help: str) -> argparse.ArgumentParser:
        return commands.add_parser(
            name,
            parents=[local if name in LOCAL_COMMANDS else common],
            help=help,
            description=help[:1].upper() + help[1:] + ".",
            epilog="Examples:" + EXAMPLES[name],
            formatter_class=argparse.RawDescriptionHelpFormatter,
            json_errors=json_errors,
        )

    demo = command("demo", help="start the local cloud, run a CUDA job, show its cost")
    demo.add_argument("--world", help="world file (JSON) shaping the simulated AWS")
    demo.add_argument("--speedup", type=positive_number, default=1.0, help="simulated job time runs this much faster")

    serve = command("serve", help="run the local cloud (embedded AWS + the API on loopback)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=port_number, default=8765, help="the API's port (0: any free port)")
    serve.add_argument(
        "--aws-port", type=port_number, default=0, help="the embedded AWS endpoint's port (default 0: any free port)"
    )
    serve.add_argument("--world", help="world file (JSON) shaping the simulated AWS")
    serve.add_argument("--speedup", type=positive_number, default=1.0, help="simulated job time runs this much faster")
    serve.add_argument("--sweep-seconds", type=seconds_or_zero, default=300.0, help="health sweep period (0: off)")
    serve.add_argument(
        "--log-file", default=".gpupilot/local-cloud.log", help="where the handlers' and the server's logs go"
    )
    serve.add_argument(
        "--verbose", action="store_true", help="also show the server's logs (requests, the embedded AWS) on stderr"
    )

    submit = command("submit", help="submit a GPU job")
    _job_arguments(submit)
    submit.add_argument(
        "--idempotency-key",
        help="the same key and body give the same job (24 h); a call that finds the first still in progress "
        "is retried for up to 30 s (default: a new key per call, so that its own retries make one job)",
    )
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
    sweep.add_argument("--timeout", type=positive_number, default=300, help="seconds to wait for the report")
    costs = command(
        "costs",
        help="what every ended attempt cost: per day, or grouped, and the waste (instances, or shares of them, that "
        "served no job); --csv for one row per attempt",
    )
    costs.add_argument("--from", dest="date_from")
    costs.add_argument("--to", dest="date_to")
    costs.add_argument("--group-by", choices=["day", "gpu_type", "job_name", "capacity_type", "region"])
    costs.add_argument("--csv", action="store_true", help="one CSV row per priced attempt")
    return parser


def smoke_body(body: dict[str, Any]) -> dict[str, Any]:
    """The request for the CUDA smoke test: the payload travels in the command (no image of our own)."""
    if body.get("command"):
        raise UsageError("--smoke runs the smoke test: give no command", field="--smoke")
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
            raise UsageError(f"cannot read --file {args.file}: {error.strerror}", field="--file") from error
        except ValueError as error:
            raise UsageError(f"--file {args.file} is not valid JSON: {error}", field="--file") from error
        if not isinstance(body, dict):
            raise UsageError(f"--file {args.file} must hold a JSON object", field="--file")
    for field in (
        "name", "image", "gpus", "min_gpu_memory_gib", "vcpus", "memory_gib", "gpu_models", "instance_types",
        "capacity", "max_hourly_usd", "price_band", "timeout_minutes", "stuck_after_minutes", "arch", "zones",
        "max_attempts", "give_up_after_minutes", "regions",
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
            raise UsageError(f"--env {pair!r} must be NAME=VALUE", field="--env")
        body.setdefault("environment", {})[name] = value
    return body


def submit_headers(key: str | None) -> dict[str, str]:
    """An Idempotency-Key on every submit: the caller's, else a new one, so that the client may retry a submit
    that failed in transit (a 5xx, a reset connection) without ever starting the job twice."""
    return {IDEMPOTENCY_HEADER: key or f"gpupilot-{uuid.uuid4().hex}"}


def _checked(response: ApiResponse) -> Any:
    if response.ok:
        return response.body
    refusal = response.body if isinstance(response.body, dict) else {}

    def said(key: str) -> str | None:
        value = refusal.get(key)
        return value if isinstance(value, str) else None

    error_class: type[CliError] = ServiceError
    if 400 <= response.status < 500:
        error_class = NotFound if response.status == 404 else UsageError
    raise error_class(
        response.error_line(),
        kind=said("error"),
        field=said("field"),
        message=said("message"),
        details={"rejected": refusal["rejected"]} if refusal.get("rejected") else None,
    )


# While a job has waited this long with no reason given, `--wait` asks for an explanation, and again this often (a
# diagnosis reads the job, its pool and its fleet: a few AWS calls; a job about to start needs none).
EXPLAIN_EVERY_SECONDS = 10.0


def follow(
    client: ApiClient,
    job_id: str,
    out: Callable[[str], None],
    poll_seconds: float = 0.5,
    limit_seconds: float = 0,
    on_poll: Callable[[dict[str, Any], float], None] | None = None,
) -> dict[str, Any]:
    """Poll the job and print each new status, and each new reason while it waits, until it ends; `on_poll` sees
    the job and the seconds since following began after every poll."""
    seen = 0
    reason = None
    started = time.monotonic()
    explained_at: float | None = None
    while True:
        job = _checked(client.request("GET", f"/jobs/{job_id}"))
        if not _unexplained(job):
            explained_at = None
        elif explained_at is None:
            explained_at = time.monotonic()  # the wait without a reason starts: explain it once it lasts
        elif time.monotonic() - explained_at >= EXPLAIN_EVERY_SECONDS:
            # Batch gives no reason: what --explain would say is the cause, as soon as the evidence shows it.
            job = _checked(client.request("GET", f"/jobs/{job_id}", query={"explain": "true"}))
            explained_at = time.monotonic()
        for entry in job["timeline"][seen:]:
            out(render.progress_line(entry, job))
        seen = len(job["timeline"])
        said = render.waiting_reason(job)
        if said and said != reason:
            out(render.reason_line(said, time.monotonic() - started, render.next_action(job)))
        reason = said
        if on_poll is not None:
            on_poll(job, time.monotonic() - started)
        if job["status"] in FINISHED:
            return dict(job)
        if limit_seconds and time.monotonic() - started > limit_seconds:
            raise ServiceError(f"job {job_id} still {job['status']} after {limit_seconds:.0f} s")
        time.sleep(poll_seconds)


def _unexplained(job: dict[str, Any]) -> bool:
    """A job waiting for its GPU with no reason given (Batch's words, or a diagnosis): one an explanation helps."""
    return job["status"] == "RUNNABLE" and not job.get("reason")


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


def follow_with_progress(client: ApiClient, job_id: str, args: argparse.Namespace) -> dict[str, Any]:
    """`follow` for `submit --wait` and `status --wait`: stdout as ever (the timeline; nothing with --json), and
    the job's progress on stderr (a live line on a terminal; else plain lines, none with --json)."""
    with render.WaitProgress(plain=not args.json) as progress:
        out = (lambda _: None) if args.json else progress.stdout(print)
        return follow(client, quote(job_id, safe=""), out, on_poll=progress.update)


def run(args: argparse.Namespace) -> int:
    if args.action in LOCAL_COMMANDS and args.endpoint:
        raise UsageError(LOCAL_COMMANDS[args.action], field="--endpoint")
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
        submitted = _checked(client.request("POST", "/jobs", body, headers=submit_headers(args.idempotency_key)))
        if not args.wait:
            emit(json.dumps(submitted, indent=2) if args.json else render.submitted(submitted))
            return 0
        job = follow_with_progress(client, submitted["job_id"], args)
        emit(json.dumps(job, indent=2) if args.json else render.job_summary(job))
        return EXIT_OK if job["status"] == "SUCCEEDED" else EXIT_JOB_FAILED
    job_path = f"/jobs/{quote(args.job_id, safe='')}" if hasattr(args, "job_id") else ""
    if args.action == "status":
        if args.wait:
            job = follow_with_progress(client, args.job_id, args)
        else:
            job = _checked(client.request("GET", job_path, query={"explain": "true"} if args.explain else None))
            if not args.json and not args.explain and _unexplained(job):
                # Batch gives no reason: show the cause the evidence shows now (what --explain says).
                job = _checked(client.request("GET", job_path, query={"explain": "true"}))
        emit(json.dumps(job, indent=2) if args.json else render.job_summary(job, explain=args.explain))
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
    from gpupilot.localcloud.server import LocalCloud, configure_logging

    configure_logging(log_file, verbose=verbose)
    cloud = LocalCloud(
        world,
        host=host,
        port=port,
        aws_port=aws_port,
        speedup=speedup,
        sweep_seconds=sweep_seconds,
        log_file=log_file,
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
    from functions.shared.domain.diagnosis import MAX_WAIT_CHECKS
    from functions.shared.domain.requests import JobRequest

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
        plan = _checked(client.request("POST", "/plan", DEMO_JOB))
        say(render.plan_table(plan, top=3))
        submitted = _checked(client.request("POST", "/jobs", DEMO_JOB, headers=submit_headers(None)))
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
        return EXIT_OK if job["status"] == "SUCCEEDED" else EXIT_JOB_FAILED
    finally:
        cloud.stop()


def unreachable_hint(args: argparse.Namespace, endpoint: str | None) -> str:
    """What to do about an endpoint nothing answers at, by where the endpoint came from."""
    if endpoint is None or args.action in ("demo", "serve"):  # the CLI's own local cloud: nothing to advise
        return ""
    source = "--endpoint" if args.endpoint else "GPUPILOT_ENDPOINT" if os.environ.get("GPUPILOT_ENDPOINT") else None
    if source is None:
        return " (start the local cloud with `gpupilot serve`, or pass --endpoint)"
    parts = urlsplit(endpoint)
    if parts.hostname in LOOPBACK_HOSTS:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return f" (from {source}: is the local cloud running there? `gpupilot serve --port {port}` starts it)"
    return f" (from {source}: check the URL, that the API is deployed there, and the network)"


def main(argv: list[str] | None = None) -> int:
    try:
        try:
            return _main(argv)
        finally:
            sys.stdout.flush()  # here, not at exit (also after --help): a reader gone by now is handled below
    except BrokenPipeError:
        # Whoever read stdout stopped (`gpupilot --json costs | head -c 300`): they have what they wanted, so
        # stop quietly, with 0 (1-4 would claim a failed job or service). As the Python docs' note on SIGPIPE
        # says, stdout then points at devnull, so that the interpreter's last flush cannot fail again.
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


def _main(argv: list[str] | None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    json_errors = wants_json(argv)
    args = build_parser(json_errors).parse_args(argv)
    try:
        return run(args)
    except CliError as error:
        return report(error, json_errors)
    except InvalidEndpoint as error:
        return report(UsageError(str(error), kind="InvalidEndpoint", field="--endpoint"), json_errors)
    except StillInProgress as error:
        line = f"{IN_PROGRESS} [Idempotency-Key]: {error}"
        return report(ServiceError(line, kind=IN_PROGRESS, field="Idempotency-Key", message=str(error)), json_errors)
    except ApiUnreachable as error:
        hint = unreachable_hint(args, error.endpoint)
        return report(ServiceError(f"{error}{hint}", kind="ServiceUnreachable"), json_errors)
    except RuntimeError as error:
        return report(ServiceError(str(error)), json_errors)
    except KeyboardInterrupt:
        return report(Interrupted("interrupted"), json_errors)


if __name__ == "__main__":
    sys.exit(main())
