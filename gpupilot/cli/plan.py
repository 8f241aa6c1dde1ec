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
    """The plan of a request; exit 2 with the API's refusal when submit would refuse the same request (the plan
    carries it: one check for both), after the plan itself."""
    try:
        plan = checked(client.request("POST", "/plan", body))
    except CliError as error:
        raise in_cli_terms(error, args) from error
    refusal = plan.get("refusal")
    if refusal:
        if args.json and args.action == "plan":
            print(json.dumps(plan, indent=2))
        elif not args.json:
            print(render.plan_table(plan))
        line = f"{refusal['error']} [{refusal['field']}]: {refusal['message']}"
        refused = UsageError(
            line,
            kind=refusal["error"],
            field=refusal["field"],
            message=refusal["message"],
            details={"rejected": plan["rejected"]},
        )
        raise in_cli_terms(refused, args)
    return dict(plan)


def plan(client: ApiClient, args: argparse.Namespace) -> int:
    """`gpupilot plan`: the ranked GPU offerings for a request; launches nothing."""
    body = job_body(args)
    require_fields(body, args.file)
    plan = planned(client, body, args)
    print(json.dumps(plan, indent=2) if args.json else render.plan_table(plan))
    return EXIT_OK
