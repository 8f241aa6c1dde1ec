"""`gpupilot submit`, `status`, `list`, `cancel` and `logs`: a job's life through the API, followed as it goes."""

from __future__ import annotations

import argparse
import base64
import json
import sys
import uuid
import zlib
from pathlib import Path
from typing import Any
from urllib.parse import quote

from gpupilot.cli import render
from gpupilot.cli.arguments import (
    EXIT_JOB_FAILED,
    EXIT_OK,
    CliError,
    CommandAdder,
    UsageError,
    checked,
    positive_integer,
)
from gpupilot.cli.client import ApiClient
from gpupilot.cli.following import follow, print_logs, unexplained
from gpupilot.cli.job_request import REQUEST_DEFAULTS, in_cli_terms, job_arguments, job_body, require_fields
from gpupilot.cli.plan import planned
from gpupilot.cli.retries import IDEMPOTENCY_HEADER

SMOKE_IMAGE = "python:3.12-slim"
JOB_STATUSES = [
    "SUBMITTED", "SELECTING", "PROVISIONING", "RUNNABLE", "STARTING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"
]  # fmt: skip


# One or more example invocations per command, shown by `gpupilot COMMAND --help`.
EXAMPLES = {
    "submit": """
  gpupilot submit --name train --image my/cuda:tag --gpus 1 --gpu-model L4 --gpu-model A10G --wait -- python train.py
  gpupilot submit -f job.yaml                     # a job file: the request's fields by their API names
  gpupilot submit -f job.yaml --yes --idempotency-key nightly-2026-11-23   # no question; safe to retry
  gpupilot submit --smoke --gpus 1 --wait         # GPU Pilot's CUDA smoke test as a job""",
    "status": """
  gpupilot status JOB_ID                          # the job, its GPU type, cost and timeline
  gpupilot status JOB_ID --wait                   # follow it until it ends (exit 0 SUCCEEDED, 1 otherwise)
  gpupilot status JOB_ID --explain                # why is it still RUNNABLE? diagnosed now""",
    "list": """
  gpupilot list
  gpupilot list --status RUNNABLE --limit 50
  gpupilot list --team vision                     # an admin: one team's jobs
  gpupilot --json list --next-token TOKEN""",
    "cancel": """
  gpupilot cancel JOB_ID""",
    "logs": """
  gpupilot logs JOB_ID                            # what the job printed (its latest attempt that ran)
  gpupilot logs JOB_ID --follow                   # and every new line until the job ends
  gpupilot logs JOB_ID --attempt 1                # the first attempt (before a fallback)""",
}


def add_submit(command: CommandAdder) -> None:
    """The `submit` command: the job request's flags, and how it is submitted."""
    submit = command("submit", help="submit a GPU job")
    job_arguments(submit)
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


def add_commands(command: CommandAdder) -> None:
    """The `status`, `list`, `cancel` and `logs` commands and their flags."""
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
    listing.add_argument("--team", help="only this team's jobs (admins; anyone else lists its own team's)")

    cancel = command("cancel", help="cancel a job")
    cancel.add_argument("job_id", help="the job's id")

    logs = command("logs", help="print what a job printed: its attempt's log stream, oldest line first")
    logs.add_argument("job_id", help="the job's id")
    logs.add_argument("--attempt", type=positive_integer, help="the attempt, from 1 (default: the latest one that ran)")
    logs.add_argument(
        "--follow",
        "-f",
        action="store_true",
        help="keep printing new lines until the job ends, waiting for its first attempt and going on to each "
        "fallback's (default: print and exit)",
    )


def smoke_body(body: dict[str, Any]) -> dict[str, Any]:
    """The request for the CUDA smoke test: the payload travels in the command (no image of our own)."""
    if body.get("command"):
        raise UsageError("--smoke runs the smoke test: give no command", field="--smoke")
    return {"name": "cuda-smoke", "image": SMOKE_IMAGE} | body | {"command": smoke_command()}


def smoke_command() -> list[str]:
    """`python3 -c` with the smoke payload, compressed: it runs in any image with Python 3 and, on Batch's GPU
    AMI, the NVIDIA driver the container runtime mounts. Its argument (the payload ignores it) names it, so that its
    exit codes count against the host it ran on, and only its own."""
    from functions.shared.domain.fleet.batch import SMOKE_NAME
    from payloads import cuda_smoke

    packed = base64.b64encode(zlib.compress(Path(cuda_smoke.__file__).read_bytes(), 9)).decode()
    return ["python3", "-c", f"import base64,zlib;exec(zlib.decompress(base64.b64decode('{packed}')))", SMOKE_NAME]


def submit_headers(key: str | None) -> dict[str, str]:
    """An Idempotency-Key on every submit: the caller's, else a new one, so that the client may retry a submit
    that failed in transit (a 5xx, a reset connection) without ever starting the job twice."""
    return {IDEMPOTENCY_HEADER: key or f"gpupilot-{uuid.uuid4().hex}"}


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


def follow_with_progress(client: ApiClient, job_id: str, args: argparse.Namespace) -> dict[str, Any]:
    """`follow` for `submit --wait` and `status --wait`: stdout as ever (the timeline; nothing with --json), and
    the job's progress on stderr (a live line on a terminal; else plain lines, none with --json)."""
    with render.WaitProgress(plain=not args.json) as progress:
        out = (lambda _: None) if args.json else progress.stdout(print)
        return follow(client, quote(job_id, safe=""), out, on_poll=progress.update)


def submit(client: ApiClient, args: argparse.Namespace) -> int:
    """`gpupilot submit`: the job from its flags and file, asked about first at a terminal; --wait follows it."""
    body = job_body(args)
    if args.smoke:
        body = smoke_body(body)
    require_fields(body, args.file)
    if asks_first(args):
        plan = planned(client, body, args)
        tried = body.get("max_attempts") or REQUEST_DEFAULTS["max_attempts"]  # as the workflow tries them
        print(render.launch_summary(plan["candidates"], plan.get("warnings", []), tried))
        if not confirmed("Submit this job? [Y/n] "):
            print("not submitted")
            return EXIT_OK
    try:
        submitted = checked(client.request("POST", "/jobs", body, headers=submit_headers(args.idempotency_key)))
    except CliError as error:
        raise in_cli_terms(error, args) from error
    if not args.wait:
        print(json.dumps(submitted, indent=2) if args.json else render.submitted(submitted))
        return EXIT_OK
    # Followed, stdout is the timeline and the summary, as ever: the type and its fallbacks show in them.
    job = follow_with_progress(client, submitted["job_id"], args)
    print(json.dumps(job, indent=2) if args.json else render.job_summary(job))
    return EXIT_OK if job["status"] == "SUCCEEDED" else EXIT_JOB_FAILED


def status(client: ApiClient, args: argparse.Namespace) -> int:
    """`gpupilot status`: one job (explained when it waits with no reason given); --wait follows it."""
    job_path = f"/jobs/{quote(args.job_id, safe='')}"
    if args.wait:
        job = follow_with_progress(client, args.job_id, args)
    else:
        job = checked(client.request("GET", job_path, query={"explain": "true"} if args.explain else None))
        if not args.json and not args.explain and unexplained(job):
            # Batch gives no reason: show the cause the evidence shows now (what --explain says).
            job = checked(client.request("GET", job_path, query={"explain": "true"}))
    print(json.dumps(job, indent=2) if args.json else render.job_summary(job, explain=args.explain))
    if args.wait:
        return EXIT_OK if job["status"] == "SUCCEEDED" else EXIT_JOB_FAILED
    return EXIT_OK


def list_jobs(client: ApiClient, args: argparse.Namespace) -> int:
    """`gpupilot list`: a page of jobs, newest first."""
    query = {"status": args.status, "limit": args.limit, "next_token": args.next_token, "team": args.team}
    result = checked(client.request("GET", "/jobs", query=query))
    print(json.dumps(result, indent=2) if args.json else render.job_list(result))
    return 0


def cancel(client: ApiClient, args: argparse.Namespace) -> int:
    """`gpupilot cancel`: cancel a job; one cancelled already is said so, exit 0 (what was asked is so)."""
    job_path = f"/jobs/{quote(args.job_id, safe='')}"
    response = client.request("DELETE", job_path)
    if (
        response.status == 409
        and isinstance(response.body, dict)
        and response.body.get("error") == "JobAlreadyFinished"
    ):
        job = checked(client.request("GET", job_path))
        if job["status"] == "CANCELLED":
            print(json.dumps(job, indent=2) if args.json else f"{job['job_id']} was already cancelled")
            return EXIT_OK
    job = checked(response)
    print(json.dumps(job, indent=2) if args.json else f"cancelled {job['job_id']} ({job['status']})")
    return EXIT_OK


def logs(client: ApiClient, args: argparse.Namespace) -> int:
    """`gpupilot logs`: what an attempt printed (--follow: until the job ends)."""

    def line(event: dict[str, Any]) -> None:
        print(json.dumps(event) if args.json else event["message"])

    def note(text: str) -> None:
        if not args.json:
            print(render.wrapped(text, "  ", ""), file=sys.stderr, flush=True)

    print_logs(client, args.job_id, args.attempt, args.follow, line, note)
    return EXIT_OK
