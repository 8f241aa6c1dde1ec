"""`gpupilot costs`: what every ended attempt cost, and the waste."""

from __future__ import annotations

import argparse
import json

from gpupilot.cli import render
from gpupilot.cli.arguments import EXIT_OK, CommandAdder, checked
from gpupilot.cli.client import ApiClient

# One or more example invocations per command, shown by `gpupilot COMMAND --help`.
EXAMPLES = {
    "costs": """
  gpupilot costs --from 2026-11-01 --to 2026-11-30
  gpupilot costs --group-by gpu_type
  gpupilot costs --group-by team                  # or owner: who submitted it
  gpupilot costs --csv > costs.csv                # one row per priced attempt""",
}


def add_command(command: CommandAdder) -> None:
    """The `costs` command and its flags."""
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
        choices=["day", "gpu_type", "job_name", "capacity_type", "region", "team", "owner"],
        default="day",
        metavar="BY",
        help="one dimension at a time: day (default), gpu_type, job_name, capacity_type, region, team or owner",
    )
    costs.add_argument("--csv", action="store_true", help="one CSV row per priced attempt")


def costs(client: ApiClient, args: argparse.Namespace) -> int:
    """`gpupilot costs`: what every ended attempt cost, per day or grouped, and the waste; --csv one row each."""
    query = {"from": args.date_from, "to": args.date_to, "group_by": args.group_by}
    if args.csv:
        print(checked(client.request("GET", "/costs", query=query, headers={"Accept": "text/csv"})), end="")
        return EXIT_OK
    report = checked(client.request("GET", "/costs", query=query))
    print(json.dumps(report, indent=2) if args.json else render.costs(report))
    return 0
