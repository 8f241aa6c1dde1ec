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

from gpupilot import render, reservations_cli
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


def positive_integer(value: str) -> int:
    """A whole number, 1 or more."""
    if not (value.isascii() and value.isdecimal()) or int(value) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number, 1 or more, not {value!r}")
    return int(value)


def seconds_or_zero(value: str) -> float:
    """A finite number of seconds, 0 or more."""
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number >= 0):
        raise argparse.ArgumentTypeError(f"must be a number of seconds, 0 or more, not {value!r}")
    return number


# What the API takes when a request leaves a field out (functions/shared/domain/requests.py: a unit test holds these
# to the model's defaults, so that help never states a default the API does not apply).
REQUEST_DEFAULTS: dict[str, Any] = {
    "gpus": 1,
    "capacity": "on-demand",
    "price_band": 3.0,
    "timeout_minutes": 60,
    "stuck_after_minutes": 15.0,
    "arch": "x86_64",
    "max_attempts": 6,
}
# The request's fields the flags set, by flag (a file's fields go by their API names).
FIELD_FLAGS = {
    "name": "--name", "image": "--image", "gpus": "--gpus", "min_gpu_memory_gib": "--min-gpu-memory-gib",
    "vcpus": "--vcpus", "memory_gib": "--memory-gib", "gpu_models": "--gpu-model", "instance_types": "--instance-type",
    "capacity": "--capacity", "max_hourly_usd": "--max-hourly-usd", "price_band": "--price-band",
    "timeout_minutes": "--timeout-minutes", "stuck_after_minutes": "--stuck-after-minutes", "environment": "--env",
    "arch": "--arch", "zones": "--zone", "regions": "--region", "max_attempts": "--max-attempts",
    "give_up_after_minutes": "--give-up-after-minutes", "reservation": "--reservation",
    "reservation_fallback": "--reservation-fallback", "command": "COMMAND",
}  # fmt: skip
REQUIRED_FIELDS = ("name", "image", "command")
JOB_STATUSES = [
    "SUBMITTED", "SELECTING", "PROVISIONING", "RUNNABLE", "STARTING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"
]  # fmt: skip


def _job_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = REQUEST_DEFAULTS
    required = parser.add_argument_group("required (here, or in the job file)")
    required.add_argument("--name", help="the job's name: 1-128 of letters, digits, '_' and '-'")
    required.add_argument("--image", help="the container image, e.g. nvidia/cuda:12.4.1-base-ubuntu22.04")
    required.add_argument(
        "command", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="-- then the command and its arguments"
    )
    parser.add_argument(
        "-f",
        "--file",
        metavar="JOB_FILE",
        help="a job file (YAML or JSON): the request's fields by their API names (see the HTTP API); flags "
        "override its fields",
    )
    parser.add_argument("--gpus", type=int, help=f"physical GPUs, 1-8 (default {defaults['gpus']})")
    parser.add_argument(
        "--min-gpu-memory-gib", type=float, help="GPU memory per GPU, GiB (default: any GPU that fits the job)"
    )
    parser.add_argument("--vcpus", type=int, help="vCPUs (default: the job's GPU share of the instance's)")
    parser.add_argument("--memory-gib", type=float, help="memory, GiB (default: the job's GPU share of the instance's)")
    parser.add_argument(
        "--gpu-model",
        action="append",
        dest="gpu_models",
        metavar="MODEL",
        help="a GPU model it may run on (L4, A10G, ...); repeat, in preference order (default: any NVIDIA GPU)",
    )
    parser.add_argument(
        "--instance-type",
        action="append",
        dest="instance_types",
        metavar="TYPE",
        help="an instance type it may run on; repeat (default: any GPU type that fits)",
    )
    parser.add_argument(
        "--capacity",
        choices=["on-demand", "spot", "spot-first", "reserved"],
        help=f"capacity type; spot-first falls back to on-demand; reserved: any Capacity Reservation or Block of the "
        f"account that fits (default {defaults['capacity']})",
    )
    parser.add_argument(
        "--reservation", metavar="CR_ID", help="run in this Capacity Reservation or Capacity Block (cr-...)"
    )
    parser.add_argument(
        "--reservation-fallback",
        action="store_const",
        const=True,
        help="with --reservation or --capacity reserved: go on to on-demand when the reservation cannot run it "
        "(default: only the reservation)",
    )
    parser.add_argument(
        "--max-hourly-usd", type=float, help="the most an instance may cost per hour (default: no limit)"
    )
    parser.add_argument(
        "--price-band",
        type=float,
        help=f"fallbacks within this multiple of the cheapest candidate's price (default {defaults['price_band']:g})",
    )
    parser.add_argument(
        "--timeout-minutes", type=int, help=f"each run's time limit, minutes (default {defaults['timeout_minutes']})"
    )
    parser.add_argument(
        "--stuck-after-minutes",
        type=float,
        help=f"how long a job may wait for its GPU before it is diagnosed and, on a capacity cause, falls back "
        f"(default {defaults['stuck_after_minutes']:g}; in the local cloud 0.1 plays a failure world out in seconds)",
    )
    parser.add_argument(
        "--env", action="append", default=[], metavar="NAME=VALUE", help="an environment variable; repeat"
    )
    parser.add_argument("--arch", choices=["x86_64", "arm64"], help=f"CPU architecture (default {defaults['arch']})")
    parser.add_argument(
        "--zone", action="append", dest="zones", help="a zone it may run in; repeat (default: the deployment's zones)"
    )
    parser.add_argument(
        "--region",
        action="append",
        dest="regions",
        help="a capacity region it may run in; repeat (default: the deployment's default_regions, else home)",
    )
    parser.add_argument(
        "--max-attempts",
        type=int,
        help=f"GPU offerings tried at most, fallbacks included (default {defaults['max_attempts']})",
    )
    parser.add_argument(
        "--give-up-after-minutes",
        type=float,
        help="fail the job if it has not started by then (default: never; it keeps falling back)",
    )


USAGES = {
    "submit": "gpupilot submit --name NAME --image IMAGE [options] -- COMMAND [ARG ...]\n"
    "       gpupilot submit -f JOB_FILE [options] [-- COMMAND [ARG ...]]",
    "plan": "gpupilot plan --name NAME --image IMAGE [options] -- COMMAND [ARG ...]\n"
    "       gpupilot plan -f JOB_FILE [options] [-- COMMAND [ARG ...]]",
}
ENDPOINT_HELP = f"API URL (default: GPUPILOT_ENDPOINT or {DEFAULT_LOCAL_ENDPOINT})"
LOCAL_ENDPOINT_HELP = "refused here (exit 2): this command runs its own local cloud"
WIDE_HELP = "tables in full, however wide (default: fitted to the terminal; a pipe always gets them in full)"
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
  gpupilot submit -f job.yaml                     # a job file: the request's fields by their API names
  gpupilot submit -f job.yaml --yes --idempotency-key nightly-2026-11-23   # no question; safe to retry
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
    "logs": """
  gpupilot logs JOB_ID                            # what the job printed (its latest attempt that ran)
  gpupilot logs JOB_ID --follow                   # and every new line until the job ends
  gpupilot logs JOB_ID --attempt 1                # the first attempt (before a fallback)""",
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
    **reservations_cli.EXAMPLES,
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
    parser.add_argument("--wide", action="store_true", help=WIDE_HELP)
    # The same flags after the command too (`gpupilot list --json`); SUPPRESS keeps the top-level value
    # when they are not repeated there.
    common = Parser(add_help=False)
    common.add_argument("--endpoint", default=argparse.SUPPRESS, help=ENDPOINT_HELP)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=JSON_HELP)
    common.add_argument("--wide", action="store_true", default=argparse.SUPPRESS, help=WIDE_HELP)
    local = Parser(add_help=False)  # demo and serve: their cloud is their own
    local.add_argument("--endpoint", default=argparse.SUPPRESS, help=LOCAL_ENDPOINT_HELP)
    local.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=JSON_HELP)
    local.add_argument("--wide", action="store_true", default=argparse.SUPPRESS, help=WIDE_HELP)
    commands = parser.add_subparsers(dest="action", required=True, parser_class=Parser)

    def command(name: str, help: str) -> argparse.ArgumentParser:
        return commands.add_parser(
            name,
            usage=USAGES.get(name),
            parents=[local if name in LOCAL_COMMANDS else common],
            help=help,
            description=help[:1].upper() + help[1:] + ".",
            epilog="Examples:" + EXAMPLES[name],
            formatter_class=argparse.RawDescriptionHelpFormatter,
            json_errors=json_errors,
        )

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
        help="health sweep period, seconds (0: off; default 300)",
    )
    serve.add_argument(
        "--log-file",
        default=".gpupilot/local-cloud.log",
        help="where the handlers' and the server's logs go (default .gpupilot/local-cloud.log)",
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
        "--yes",
        "-y",
        action="store_true",
        help="submit without asking (a terminal is shown the plan and asked first; a script or pipe never is)",
    )
    submit.add_argument(
        "--smoke",
        action="store_true",
        help=f"run GPU Pilot's CUDA smoke test (payloads/cuda_smoke.py in {SMOKE_IMAGE}) instead of a command",
    )

    plan = command("plan", help="rank GPU types for a request; launches nothing")
    _job_arguments(plan)

    status = command("status", help="show one job")
    status.add_argument("job_id", help="the job's id (from submit or list)")
    status.add_argument("--wait", action="store_true", help="follow the job until it ends")
    status.add_argument("--explain", action="store_true", help="diagnose why the job waits, now")

    listing = command("list", help="list jobs, newest first")
    listing.add_argument(
        "--status",
        choices=JOB_STATUSES,
        metavar="STATUS",
        help=f"only jobs in this status: {', '.join(JOB_STATUSES)} (default: all)",
    )
    listing.add_argument("--limit", type=int, default=20, help="jobs per page, 1-100 (default 20)")
    listing.add_argument("--next-token", help="the next page: the token the previous page printed")

    cancel = command("cancel", help="cancel a job")
    cancel.add_argument("job_id", help="the job's id")

    logs = command("logs", help="print what a job printed: its attempt's log stream, oldest line first")
    logs.add_argument("job_id", help="the job's id")
    logs.add_argument("--attempt", type=positive_integer, help="the attempt, from 1 (default: the latest one that ran)")
    logs.add_argument(
        "--follow",
        "-f",
        action="store_true",
        help="keep printing new lines until the job ends (default: print and exit)",
    )

    health = command("health", help="latest health sweep (or one by --sweep-id)")
    health.add_argument("--sweep-id", help="a sweep started by `gpupilot sweep` (default: the latest)")
    sweep = command("sweep", help="run a health sweep now, wait for it, print its report")
    sweep.add_argument(
        "--timeout", type=positive_number, default=300, help="seconds to wait for the report (default 300)"
    )
    costs = command(
        "costs",
        help="what every ended attempt cost: per day, or grouped, and the waste (instances, or shares of them, that "
        "served no job); --csv for one row per attempt",
    )
    costs.add_argument(
        "--from", dest="date_from", metavar="YYYY-MM-DD", help="first day (default: 30 days before --to)"
    )
    costs.add_argument("--to", dest="date_to", metavar="YYYY-MM-DD", help="last day (default: today, UTC)")
    costs.add_argument(
        "--group-by",
        choices=["day", "gpu_type", "job_name", "capacity_type", "region"],
        default="day",
        help="one dimension at a time (default day)",
    )
    costs.add_argument("--csv", action="store_true", help="one CSV row per priced attempt")
    reservations_cli.add_commands(command, positive_integer)
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


def read_job_file(path: str) -> dict[str, Any]:
    """A job file: YAML (JSON is YAML too) holding the request's fields by their API names; an unknown key is
    refused, naming it (a misspelt field would otherwise be dropped, or refused by the API far from its line)."""
    import yaml

    from functions.shared.domain.requests import JobRequest

    try:
        text = Path(path).read_text()
    except OSError as error:
        raise UsageError(f"cannot read --file {path}: {error.strerror}", field="--file") from error
    try:
        body = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    except ValueError as error:
        raise UsageError(f"--file {path} is not valid JSON: {error}", field="--file") from error
    except yaml.YAMLError as error:
        raise UsageError(f"--file {path} is not valid YAML: {' '.join(str(error).split())}", field="--file") from error
    if not isinstance(body, dict):
        raise UsageError(f"--file {path} must hold a mapping of the request's fields", field="--file")
    known = JobRequest.model_fields
    unknown = [str(key) for key in body if key not in known]
    if unknown:
        raise UsageError(
            f"--file {path}: unknown key {unknown[0]!r} (a job file takes the request's fields: {', '.join(known)})",
            field=unknown[0],
        )
    return body


def job_body(args: argparse.Namespace) -> dict[str, Any]:
    """The request body from --file and the flags; flags win."""
    body: dict[str, Any] = read_job_file(args.file) if args.file else {}
    for field in (
        "name", "image", "gpus", "min_gpu_memory_gib", "vcpus", "memory_gib", "gpu_models", "instance_types",
        "capacity", "max_hourly_usd", "price_band", "timeout_minutes", "stuck_after_minutes", "arch", "zones",
        "max_attempts", "give_up_after_minutes", "regions", "reservation", "reservation_fallback",
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


def require_fields(body: dict[str, Any], job_file: str | None) -> None:
    """Refuse, in the CLI's words, a request without a name, an image or a command (before any call)."""
    where = " (or in the job file)" if job_file else ""
    for field in REQUIRED_FIELDS:
        if not body.get(field):
            if field == "command":
                raise UsageError(f"a command is required: -- COMMAND [ARG ...]{where}", field="command")
            raise UsageError(f"{FIELD_FLAGS[field]} is required{where}", field=FIELD_FLAGS[field])


def in_cli_terms(error: CliError, args: argparse.Namespace) -> CliError:
    """An API refusal of a request field, said as the flag (or the job file's key) the field came from."""
    field = (error.field or "").split(".")[0]
    flag = FIELD_FLAGS.get(field)
    if flag is None or not isinstance(error, UsageError) or error.kind == "NoCandidate":
        return error
    message = error.message.removeprefix(f"{error.field}: ")
    from_flag = (flag == "COMMAND" and bool(args.command)) or getattr(args, field, None) not in (None, [])
    said = flag if from_flag or not args.file else f"{field} in {args.file}"
    line = f"{said} is required" if message == "Field required" else f"{said}: {message}"
    # The JSON error keeps the API's field name: what a script reads does not change with the words.
    return UsageError(line, kind=error.kind, field=error.field, message=line, details=error.details)


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
        timeline = job["timeline"]
        waited = time.monotonic() - started
        if seen and len(timeline) > seen:
            # The entry already shown was explained as the job moved on (the diagnosis that made it fall back): its
            # reason goes under it, before the next entries, never under the fallback's line as if the new type
            # waited for it.
            explained = timeline[seen - 1].get("reason")
            if explained and explained != reason:
                out(render.reason_line(explained, waited))
                reason = explained
        for entry in timeline[seen:]:
            out(render.progress_line(entry, job))
        seen = len(timeline)
        said = render.waiting_reason(job)
        if said and said != reason and said not in {entry.get("reason") for entry in timeline[:-1]}:
            out(render.reason_line(said, waited, render.next_action(job)))
        reason = said or reason
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


# How often `logs --follow` asks for new lines once it has read all there are.
LOG_POLL_SECONDS = 1.0


def print_logs(
    client: ApiClient,
    job_id: str,
    attempt: int | None,
    follow_job: bool,
    out: Callable[[dict[str, Any]], None],
    say: Callable[[str], None],
    poll_seconds: float = LOG_POLL_SECONDS,
) -> dict[str, Any]:
    """Every line of the attempt's stream, oldest first, page after page (CloudWatch Logs' end of stream: the same
    token back); following, on until the job has ended and its last lines are read. The last page is returned."""
    path = f"/jobs/{quote(job_id, safe='')}/logs"
    token: str | None = None
    stream: str | None = None
    while True:
        page = _checked(client.request("GET", path, query={"attempt": attempt, "next_token": token}))
        if page.get("log_stream") != stream:
            moved = stream is not None
            stream = page.get("log_stream")
            say(f"attempt {page['attempt']} ({page['attempt_status']}): {page['log_group']} {stream}")
            if moved:
                # Followed without --attempt, the job fell back and its next attempt runs: read its stream anew.
                token = None
                continue
        for event in page["events"]:
            out(event)
        ended = page["status"] in FINISHED
        read_all = page.get("next_token") == token or not page.get("next_token")
        if read_all and (not follow_job or ended):
            if not stream:
                state = "ended without running" if ended else f"has not run yet ({page['attempt_status']})"
                say(f"attempt {page['attempt']} of job {job_id} {state}: no log stream (--follow waits for it)")
            return dict(page)
        token = page.get("next_token") or token
        if read_all:
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


def terminal_width(args: argparse.Namespace) -> int | None:
    """The width tables are fitted to: the terminal's (rich reads it, COLUMNS first), none with --wide or when
    stdout is not a terminal."""
    if args.wide or not sys.stdout.isatty():
        return None
    from rich.console import Console

    return int(Console().width)


def asks_first(args: argparse.Namespace) -> bool:
    """Whether submit shows its plan and asks before submitting: only a person at a terminal is asked (never with
    --yes, --json, or when stdin or stdout is not a terminal: a script, a pipe, CI)."""
    return not (args.yes or args.json) and sys.stdin.isatty() and sys.stdout.isatty()


def confirmed(question: str) -> bool:
    """Yes unless the answer starts with n (Enter is yes); end of input (Ctrl-D) is no."""
    try:
        answer = input(question)
    except EOFError:
        print()
        return False
    return not answer.strip().lower().startswith("n")


def planned(client: ApiClient, body: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The plan of a request, with the first reasons said and exit 2 when no GPU offering can serve it (as submit
    refuses the same request)."""
    try:
        plan = _checked(client.request("POST", "/plan", body))
    except CliError as error:
        raise in_cli_terms(error, args) from error
    if not plan["candidates"]:
        if args.json and args.action == "plan":
            print(json.dumps(plan, indent=2))
        elif not args.json:
            print(render.plan_table(plan))
        first = "; ".join(f"{r['instance_type']}: {r['reason']}" for r in plan["rejected"][:2])
        raise UsageError(
            f"no GPU offering can serve this request ({len(plan['rejected'])} rejected; first: {first})",
            kind="NoCandidate",
            details={"rejected": plan["rejected"]},
        )
    return dict(plan)


def submit_or_plan(client: ApiClient, args: argparse.Namespace) -> int:
    body = job_body(args)
    if getattr(args, "smoke", False):
        body = smoke_body(body)
    require_fields(body, args.file)
    if args.action == "plan":
        plan = planned(client, body, args)
        print(json.dumps(plan, indent=2) if args.json else render.plan_table(plan))
        return EXIT_OK
    if asks_first(args):
        plan = planned(client, body, args)
        tried = body.get("max_attempts") or REQUEST_DEFAULTS["max_attempts"]  # as the workflow tries them
        print(render.launch_summary(plan["candidates"], plan.get("warnings", []), tried))
        if not confirmed("Submit this job? [Y/n] "):
            print("not submitted")
            return EXIT_OK
    try:
        submitted = _checked(client.request("POST", "/jobs", body, headers=submit_headers(args.idempotency_key)))
    except CliError as error:
        raise in_cli_terms(error, args) from error
    if not args.wait:
        print(json.dumps(submitted, indent=2) if args.json else render.submitted(submitted))
        return EXIT_OK
    # Followed, stdout is the timeline and the summary, as ever: the type and its fallbacks show in them.
    job = follow_with_progress(client, submitted["job_id"], args)
    print(json.dumps(job, indent=2) if args.json else render.job_summary(job))
    return EXIT_OK if job["status"] == "SUCCEEDED" else EXIT_JOB_FAILED


def follow_with_progress(client: ApiClient, job_id: str, args: argparse.Namespace) -> dict[str, Any]:
    """`follow` for `submit --wait` and `status --wait`: stdout as ever (the timeline; nothing with --json), and
    the job's progress on stderr (a live line on a terminal; else plain lines, none with --json)."""
    with render.WaitProgress(plain=not args.json) as progress:
        out = (lambda _: None) if args.json else progress.stdout(print)
        return follow(client, quote(job_id, safe=""), out, on_poll=progress.update)


def run(args: argparse.Namespace) -> int:
    render.fit_to(terminal_width(args))
    if args.action in LOCAL_COMMANDS and args.endpoint:
        raise UsageError(LOCAL_COMMANDS[args.action], field="--endpoint")
    if args.action == "serve":
        return serve(args)
    if args.action == "demo":
        return demo(args)
    client = ApiClient(args.endpoint)
    emit = print
    if args.action in ("submit", "plan"):
        return submit_or_plan(client, args)
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
    if args.action == "logs":

        def line(event: dict[str, Any]) -> None:
            emit(json.dumps(event) if args.json else event["message"])

        def note(text: str) -> None:
            if not args.json:
                print(text, file=sys.stderr, flush=True)

        print_logs(client, args.job_id, args.attempt, args.follow, line, note)
        return EXIT_OK
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
    if args.action in ("reservations", "reserve"):
        return reservations_cli.run(args, client, _checked, _refuse)
    raise UsageError(f"unknown command {args.action}")


def _refuse(message: str, field: str | None = None) -> None:
    raise UsageError(message, field=field)


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
