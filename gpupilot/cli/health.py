"""`gpupilot health` and `gpupilot sweep`: the fleet's health sweeps, the latest or one run now."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from gpupilot.cli import render
from gpupilot.cli.arguments import EXIT_OK, EXIT_SERVICE, CommandAdder, ServiceError, checked, positive_number
from gpupilot.cli.client import ApiClient

# One or more example invocations per command, shown by `gpupilot COMMAND --help`.
EXAMPLES = {
    "health": """
  gpupilot health                                 # the latest health sweep
  gpupilot health --sweep-id SWEEP_ID""",
    "sweep": """
  gpupilot sweep                                  # start a health sweep, wait for its report, print it
  gpupilot --json sweep --timeout 120""",
}


def add_commands(command: CommandAdder) -> None:
    """The `health` and `sweep` commands and their flags."""
    health = command("health", help="latest health sweep (or one by --sweep-id)")
    health.add_argument("--sweep-id", help="a sweep started by `gpupilot sweep` (default: the latest)")
    sweep = command("sweep", help="run a health sweep now, wait for it, print its report")
    sweep.add_argument(
        "--timeout", type=positive_number, default=300, help="seconds to wait for the report (default 300)"
    )


def wait_for_sweep(client: ApiClient, sweep_id: str, limit_seconds: float, poll_seconds: float = 0.5) -> dict[str, Any]:
    """The sweep's report once the sweep function has finished it."""
    started = time.monotonic()
    while True:
        report = checked(client.request("GET", "/health", query={"sweep_id": sweep_id}))
        if report.get("status") != "RUNNING":
            return dict(report)
        if time.monotonic() - started > limit_seconds:
            raise ServiceError(f"sweep {sweep_id} still RUNNING after {limit_seconds:.0f} s")
        time.sleep(poll_seconds)


def health(client: ApiClient, args: argparse.Namespace) -> int:
    """`gpupilot health`: the latest health sweep's report, or one by --sweep-id."""
    report = checked(client.request("GET", "/health", query={"sweep_id": args.sweep_id}))
    print(json.dumps(report, indent=2) if args.json else render.health(report))
    return 0


def sweep(client: ApiClient, args: argparse.Namespace) -> int:
    """`gpupilot sweep`: start a health sweep, wait for its report, print it."""
    started = checked(client.request("POST", "/sweep"))
    if not args.json:
        print(f"sweep {started['sweep_id']} started; waiting for its report")
    report = wait_for_sweep(client, started["sweep_id"], args.timeout)
    print(json.dumps(report, indent=2) if args.json else render.health(report))
    return EXIT_SERVICE if report.get("status") == "FAILED" else EXIT_OK
