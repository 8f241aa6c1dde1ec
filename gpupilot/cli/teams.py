"""`gpupilot whoami`, `gpupilot teams` and `gpupilot audit`: who the API takes you for, each team's budget and GPUs,
and the audit log."""

from __future__ import annotations

import argparse
import json
from typing import Any

from gpupilot.cli.arguments import EXIT_OK, CommandAdder, checked
from gpupilot.cli.client import ApiClient
from gpupilot.cli.layout import table

# One or more example invocations per command, shown by `gpupilot COMMAND --help`.
EXAMPLES = {
    "whoami": """
  gpupilot whoami                                 # the principal the API sees, its team and role
  AWS_PROFILE=alice gpupilot whoami               # as another identity (profile, environment)""",
    "teams": """
  gpupilot teams                                  # your team's budget and GPUs (an admin: every team)""",
    "audit": """
  gpupilot audit                                  # today's audit lines (admins)
  gpupilot audit --from 2026-11-01 --to 2026-11-07""",
}


def add_commands(command: CommandAdder) -> None:
    """The `whoami`, `teams` and `audit` commands and their flags."""
    command("whoami", help="who the API takes you for: your IAM principal, team and role")
    command("teams", help="each team's budget, what it spent today and this month, what it holds committed, and its "
            "GPUs in use against its cap")  # fmt: skip
    audit = command("audit", help="the audit log: what changed or was refused, by whom (admins)")
    audit.add_argument("--from", dest="date_from", metavar="YYYY-MM-DD", help="first day (default: --to)")
    audit.add_argument("--to", dest="date_to", metavar="YYYY-MM-DD", help="last day (default: today, UTC)")


def whoami(client: ApiClient, args: argparse.Namespace) -> int:
    """`gpupilot whoami`: the principal, team and role the API sees."""
    caller = checked(client.request("GET", "/whoami"))
    print(json.dumps(caller, indent=2) if args.json else caller_words(caller))
    return EXIT_OK


def teams(client: ApiClient, args: argparse.Namespace) -> int:
    """`gpupilot teams`: each team the caller may see, with its budget, spending and GPUs."""
    answer = checked(client.request("GET", "/teams"))
    print(json.dumps(answer, indent=2) if args.json else team_table(answer["teams"]))
    return EXIT_OK


def audit(client: ApiClient, args: argparse.Namespace) -> int:
    """`gpupilot audit`: the audit lines of the days asked, oldest first."""
    answer = checked(client.request("GET", "/audit", query={"from": args.date_from, "to": args.date_to}))
    print(json.dumps(answer, indent=2) if args.json else audit_table(answer))
    return EXIT_OK


def caller_words(caller: dict[str, Any]) -> str:
    team = f" of team {caller['team']}" if caller.get("team") else ""
    return f"{caller['principal']}\n{caller['role']}{team}"


def _dollars(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def team_table(found: list[dict[str, Any]]) -> str:
    if not found:
        return "no teams: this deployment has none (every caller is an admin)"
    rows = [
        (
            t["team"],
            f"{_dollars(t.get('spent_usd_today'))} / {_dollars(t.get('budget_usd_per_day'))}",
            f"{_dollars(t.get('spent_usd_month'))} / {_dollars(t.get('budget_usd_per_month'))}",
            _dollars(t.get("committed_usd")),
            "-" if t.get("max_gpus") is None else f"{t.get('gpus_in_use') or 0} / {t['max_gpus']}",
        )
        for t in found
    ]
    return table(("team", "today $ (of budget)", "month $ (of budget)", "committed $", "GPUs (of cap)"), rows)


def audit_table(answer: dict[str, Any]) -> str:
    events = answer.get("events") or []
    if not events:
        return "no audit lines in those days"
    rows = [
        (
            e["at"][:19].replace("T", " "),
            e["principal"].rsplit(":", 1)[-1],
            e.get("team") or "-",
            e.get("role") or "-",
            e["action"],
            e.get("resource") or "-",
            e["outcome"],
            (e.get("detail") or {}).get("reason") or (e.get("detail") or {}).get("message") or "",
        )
        for e in events
    ]
    out = table(("at (UTC)", "principal", "team", "role", "action", "resource", "outcome", "why"), rows,
                beneath="why")  # fmt: skip
    return out + ("\nmore lines than one answer holds: ask for fewer days" if answer.get("truncated") else "")
