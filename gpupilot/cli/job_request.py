"""A job's request from the flags and a job file, the flags that set it, and the API's refusals of it said in
the CLI's words (the flag, or the job file's key, a field came from); submit and plan share them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from gpupilot.cli.arguments import CliError, UsageError

# What the API takes when a request leaves a field out (functions/shared/domain/requests/job_request.py: a unit test
# holds these to the model's defaults, so that help never states a default the API does not apply).
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
    "reservation_fallback": "--reservation-fallback", "allow_unpriced": "--allow-unpriced", "command": "COMMAND",
}  # fmt: skip
REQUIRED_FIELDS = ("name", "image", "command")


def job_arguments(parser: argparse.ArgumentParser) -> None:
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
        "--allow-unpriced",
        action="store_const",
        const=True,
        help="try GPU types of unknown price the price band leaves out (default: one is tried only where a priced "
        "candidate within the band has as many of the same GPUs)",
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
        help="fail the job if it has not started by then (default: no time limit; the job still fails once its last "
        "candidate, of --max-attempts, has waited --stuck-after-minutes and been diagnosed stuck)",
    )


USAGES = {
    "submit": "gpupilot submit --name NAME --image IMAGE [options] -- COMMAND [ARG ...]\n"
    "       gpupilot submit -f JOB_FILE [options] [-- COMMAND [ARG ...]]",
    "plan": "gpupilot plan --name NAME --image IMAGE [options] -- COMMAND [ARG ...]\n"
    "       gpupilot plan -f JOB_FILE [options] [-- COMMAND [ARG ...]]",
}


def read_job_file(path: str) -> dict[str, Any]:
    """A job file: YAML (JSON is YAML too) holding the request's fields by their API names; an unknown key is
    refused, naming it (a misspelt field would otherwise be dropped, or refused by the API far from its line)."""
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise UsageError(f"cannot read --file {path}: {error.strerror}", field="--file") from error
    return job_file_body(text, f"--file {path}", as_json=path.endswith(".json"))


def job_file_body(text: str, where: str, as_json: bool = False) -> dict[str, Any]:
    """A job file's text as the request's fields (`where` names it in a refusal): the console reads a pasted job
    file with it too."""
    import yaml

    from functions.shared.domain.requests.job_request import JobRequest

    try:
        body = json.loads(text) if as_json else yaml.safe_load(text)
    except ValueError as error:
        raise UsageError(f"{where} is not valid JSON: {error}", field="--file") from error
    except yaml.YAMLError as error:
        raise UsageError(f"{where} is not valid YAML: {' '.join(str(error).split())}", field="--file") from error
    if not isinstance(body, dict):
        raise UsageError(f"{where} must hold a mapping of the request's fields", field="--file")
    known = JobRequest.model_fields
    unknown = [str(key) for key in body if key not in known]
    if unknown:
        raise UsageError(
            f"{where}: unknown key {unknown[0]!r} (a job file takes the request's fields: {', '.join(known)})",
            field=unknown[0],
        )
    return body


def job_body(args: argparse.Namespace) -> dict[str, Any]:
    """The request body from --file and the flags; flags win."""
    body: dict[str, Any] = read_job_file(args.file) if args.file else {}
    for field in (
        "name", "image", "gpus", "min_gpu_memory_gib", "vcpus", "memory_gib", "gpu_models", "instance_types",
        "capacity", "max_hourly_usd", "price_band", "timeout_minutes", "stuck_after_minutes", "arch", "zones",
        "max_attempts", "give_up_after_minutes", "regions", "reservation", "reservation_fallback", "allow_unpriced",
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
    """An API refusal of a request field, said as the flag (or the job file's key) the field came from; a refusal of
    the whole request (NoCandidate) names it beside its kind."""
    field = (error.field or "").split(".")[0]
    flag = FIELD_FLAGS.get(field)
    if flag is None or not isinstance(error, UsageError):
        return error
    message = error.message.removeprefix(f"{error.field}: ")
    from_flag = (flag == "COMMAND" and bool(args.command)) or getattr(args, field, None) not in (None, [])
    said = flag if from_flag or not args.file else f"{field} in {args.file}"
    if error.kind == "NoCandidate":
        line = f"{error.kind} [{said}]: {message}"
    else:
        line = f"{said} is required" if message == "Field required" else f"{said}: {message}"
    # The JSON error keeps the API's field name: what a script reads does not change with the words.
    return UsageError(line, kind=error.kind, field=error.field, message=line, details=error.details)
