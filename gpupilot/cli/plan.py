"""`gpupilot plan`: rank GPU types for a request, launching nothing (submit asks the same question first)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from gpupilot.cli import render
from gpupilot.cli.arguments import EXIT_OK, CliError, CommandAdder, UsageError, checked
from gpupilot.cli.client import ApiClient
from gpupilot.cli.job_request import in_cli_terms, job_arguments, job_body, require_fields

# One or more example invocations per command, shown by `gpupilot COMMAND --help`.
EXAMPLES = {
    "plan": """
  gpupilot plan --name train --image my/cuda:tag --gpus 4 -- python train.py
  gpupilot --json plan --file job.json --capacity spot-first""",
}


def add_command(command: CommandAdder) -> None:
    """The `plan` command: the job request's flags."""
    plan = command("plan", help="rank GPU types for a request; launches nothing")
    job_arguments(plan)


def planned(client: ApiClient, body: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The plan of a request, with the first reasons said and exit 2 when no GPU offering can serve it (as submit
    refuses the same request)."""
    try:
        plan = checked(client.request("POST", "/plan", body))
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


def plan(client: ApiClient, args: argparse.Namespace) -> int:
    """`gpupilot plan`: the ranked GPU offerings for a request; launches nothing."""
    body = job_body(args)
    require_fields(body, args.file)
    plan = planned(client, body, args)
    print(json.dumps(plan, indent=2) if args.json else render.plan_table(plan))
    return EXIT_OK
