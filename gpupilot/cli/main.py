"""`gpupilot`: submit and watch GPU jobs, and run the local cloud.

Without --endpoint (or GPUPILOT_ENDPOINT) the CLI talks to the local cloud started by `gpupilot serve`.
Bad input exits 2 with one line (with --json: one JSON object) on stderr; a job that ends FAILED exits 1.

The parser and the dispatch: each command group's flags and work live in its own module beside this one.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable

from gpupilot.cli import costs, demo, health, jobs, local, plan, render, reservations, teams, ui
from gpupilot.cli.arguments import (
    ENDPOINT_HELP,
    EXIT_OK,
    JSON_HELP,
    LOCAL_ENDPOINT_HELP,
    WIDE_HELP,
    CliError,
    HelpFormatter,
    Interrupted,
    Parser,
    ServiceError,
    UsageError,
    report,
    terminal_width,
    unreachable_hint,
    wants_json,
)
from gpupilot.cli.client import IN_PROGRESS, ApiClient, ApiUnreachable, InvalidEndpoint, StillInProgress
from gpupilot.cli.job_request import USAGES
from gpupilot.cli.local import LOCAL_COMMANDS

# The commands that call the API, by name (demo and serve run their own local cloud).
COMMANDS: dict[str, Callable[[ApiClient, argparse.Namespace], int]] = {
    "submit": jobs.submit,
    "plan": plan.plan,
    "status": jobs.status,
    "list": jobs.list_jobs,
    "cancel": jobs.cancel,
    "logs": jobs.logs,
    "health": health.health,
    "sweep": health.sweep,
    "costs": costs.costs,
    "reservations": reservations.run,
    "reserve": reservations.run,
    "ui": ui.ui,
    "whoami": teams.whoami,
    "teams": teams.teams,
    "audit": teams.audit,
}
EXAMPLES = (
    local.EXAMPLES
    | jobs.EXAMPLES
    | plan.EXAMPLES
    | health.EXAMPLES
    | costs.EXAMPLES
    | reservations.EXAMPLES
    | ui.EXAMPLES
    | teams.EXAMPLES
)


TOP_EXAMPLES = """
  gpupilot serve &
  gpupilot submit --name train --image my/cuda:tag --gpus 1 --wait -- python train.py
  gpupilot --endpoint https://abc.execute-api.us-east-1.amazonaws.com/v1 list

exit codes: 0 done (--wait: the job SUCCEEDED), 1 the job ended FAILED or CANCELLED, 2 bad input or a 4xx,
3 no such job or sweep, 4 the service failed or could not be reached; `gpupilot COMMAND --help` for more."""


def build_parser(json_errors: bool = False) -> Parser:
    """The CLI's parser: its commands in the order help lists them, each added by its command group."""
    parser = Parser(
        prog="gpupilot",
        description="Run CUDA jobs on GPUs that exist, and know why they wait.",
        epilog="Examples:" + TOP_EXAMPLES,
        formatter_class=HelpFormatter,
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
    own_cloud = Parser(add_help=False)  # demo and serve: their cloud is their own
    own_cloud.add_argument("--endpoint", default=argparse.SUPPRESS, help=LOCAL_ENDPOINT_HELP)
    own_cloud.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help=JSON_HELP)
    own_cloud.add_argument("--wide", action="store_true", default=argparse.SUPPRESS, help=WIDE_HELP)
    commands = parser.add_subparsers(dest="action", required=True, parser_class=Parser, metavar="COMMAND")

    def command(name: str, help: str) -> argparse.ArgumentParser:
        return commands.add_parser(
            name,
            usage=USAGES.get(name),
            parents=[own_cloud if name in LOCAL_COMMANDS else common],
            help=help,
            description=help[:1].upper() + help[1:] + ".",
            epilog="Examples:" + EXAMPLES[name],
            formatter_class=HelpFormatter,
            json_errors=json_errors,
        )

    local.add_commands(command)
    jobs.add_submit(command)
    plan.add_command(command)
    jobs.add_commands(command)
    health.add_commands(command)
    costs.add_command(command)
    reservations.add_commands(command)
    ui.add_command(command)
    teams.add_commands(command)
    return parser


def run(args: argparse.Namespace) -> int:
    """The command the arguments name, run; its exit code."""
    render.fit_to(terminal_width(args))
    if args.action in LOCAL_COMMANDS and args.endpoint:
        raise UsageError(LOCAL_COMMANDS[args.action], field="--endpoint")
    if args.action == "serve":
        return local.serve(args)
    if args.action == "demo":
        return demo.demo(args)
    client = ApiClient(args.endpoint)
    command = COMMANDS.get(args.action)
    if command is None:
        raise UsageError(f"unknown command {args.action}")
    return command(client, args)


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
