"""What every command shares: exit codes, the CLI's errors and how they are said, the parser and its value
types, the flags every command takes, where the API is, and an API answer checked into the CLI's error."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import textwrap
from typing import Any, NoReturn, Protocol
from urllib.parse import urlsplit

from gpupilot.cli.client import DEFAULT_LOCAL_ENDPOINT, LOOPBACK_HOSTS, ApiResponse

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


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's help at the terminal's width: prose (a description, the exit codes) filled, each example on one line
    where it fits (else its comment goes under it, and a command too long for a line goes on below, shell-continued
    with a backslash), and no flag broken at its hyphens."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False, break_long_words=False)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines: list[str] = []
        prose: list[str] = []

        def end_paragraph() -> None:
            if prose:
                lines.extend(self._split_lines(" ".join(prose), width))
                prose.clear()

        for line in text.splitlines():
            if line.startswith("  "):
                end_paragraph()
                lines.extend(example_lines(line, width))
            elif not line.strip():
                end_paragraph()
                lines.append("")
            else:
                prose.append(line)
        end_paragraph()
        return "\n".join(indent + line for line in lines)


def example_lines(line: str, width: int) -> list[str]:
    """An example (`  gpupilot ...   # what it does`) in lines of at most `width`: whole when it fits, else its comment
    under it, and the command itself continued with a backslash when it does not fit either."""
    if len(line) <= width:
        return [line]
    command, hashed, comment = line.partition("  # ")
    command = command.rstrip()
    lead = " " * (len(command) - len(command.lstrip()))
    words = textwrap.wrap(
        command.strip(), width - len(lead) - 6, break_on_hyphens=False, break_long_words=False
    )  # room for the continuation's indent and its backslash
    shown = [f"{lead}{words[0]}"] + [f"{lead}    {part}" for part in words[1:]]
    shown = [f"{part} \\" for part in shown[:-1]] + shown[-1:]
    if hashed:
        shown += textwrap.wrap(
            comment, width - len(lead) - 6, initial_indent=f"{lead}  # ", subsequent_indent=f"{lead}  # "
        )
    return shown


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


ENDPOINT_HELP = f"API URL (default: GPUPILOT_ENDPOINT or {DEFAULT_LOCAL_ENDPOINT})"
LOCAL_ENDPOINT_HELP = "refused here (exit 2): this command runs its own local cloud"
WIDE_HELP = "tables in full, however wide (default: fitted to the terminal; a pipe always gets them in full)"
JSON_HELP = "machine-readable output (errors too: one JSON object on stderr)"


class CommandAdder(Protocol):
    """Adds a command to the parser: its name and help (its examples and usage by its name)."""

    def __call__(self, name: str, help: str) -> argparse.ArgumentParser: ...


def checked(response: ApiResponse) -> Any:
    """The API's answer, or its refusal or failure as the CLI's error (4xx: exit 2, 404: 3, else 4)."""
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
        # What the refusal says beyond its words (a NoCandidate's `rejected`, a BudgetExceeded's figures), kept for
        # --json: a script reads the team's budget and the timeout that fits from there.
        details={k: v for k, v in refusal.items() if k not in ("error", "field", "message") and v is not None} or None,
    )


def terminal_width(args: argparse.Namespace) -> int | None:
    """The width tables are fitted to: the terminal's (rich reads it, COLUMNS first), none with --wide or when
    stdout is not a terminal."""
    if args.wide or not sys.stdout.isatty():
        return None
    from rich.console import Console

    return int(Console().width)


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
