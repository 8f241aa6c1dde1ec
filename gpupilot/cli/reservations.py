"""`gpupilot reservations` and `gpupilot reserve`: the capacity the account holds, the Capacity Blocks on offer, and
buying one (only with --yes and a --max-upfront-usd the fee must not exceed; the deployment must allow it)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from gpupilot.cli.arguments import CommandAdder, UsageError, checked, positive_integer
from gpupilot.cli.client import ApiClient
from gpupilot.cli.layout import table, wrapped

EXAMPLES = {
    "reservations": """
  gpupilot reservations                           # what the account holds, what of it is idle, what idle cost
  gpupilot reservations --offerings --type p5.48xlarge --count 2 --days 3   # Capacity Blocks on offer""",
    "reserve": """
  gpupilot reserve cb-0123456789abcdef0 --yes --max-upfront-usd 95000   # buy a listed Capacity Block""",
}


def add_commands(command: CommandAdder) -> None:
    """The `reservations` and `reserve` commands and their flags."""
    listing = command(
        "reservations",
        "the account's Capacity Reservations and Capacity Blocks (and their idle cost); --offerings: the Capacity "
        "Blocks EC2 offers",
    )
    listing.add_argument("--offerings", action="store_true", help="list Capacity Block offerings instead")
    listing.add_argument("--type", dest="instance_type", help="with --offerings: the GPU type, e.g. p5.48xlarge")
    listing.add_argument("--count", type=positive_integer, default=1, help="with --offerings: instances (default 1)")
    listing.add_argument("--days", type=positive_integer, default=1, help="with --offerings: days (default 1)")
    reserve = command("reserve", "buy a listed Capacity Block (charged up front; it cannot be cancelled)")
    reserve.add_argument("offering_id", help="an offering `reservations --offerings` listed (cb-...)")
    reserve.add_argument("--yes", action="store_true", help="required: you agree to pay the fee up front")
    reserve.add_argument(
        "--max-upfront-usd", type=float, required=True, help="the most you agree to pay: a higher fee is refused"
    )


def run(client: ApiClient, args: argparse.Namespace) -> int:
    """`gpupilot reservations` or `gpupilot reserve`."""
    if args.action == "reserve":
        if not args.yes:
            raise UsageError(
                "reserve buys a Capacity Block, charged up front and not cancellable: add --yes", field="--yes"
            )
        body = {"offering_id": args.offering_id, "max_upfront_usd": args.max_upfront_usd, "confirm": True}
        bought = checked(client.request("POST", "/reservations/purchase", body))
        print(json.dumps(bought, indent=2) if args.json else f"bought {bought['reservation_id']}: {bought['words']}")
        return 0
    if args.offerings:
        if not args.instance_type:
            raise UsageError("--offerings needs --type, e.g. --type p5.48xlarge", field="--type")
        query = {"instance_type": args.instance_type, "count": args.count, "days": args.days}
        found = checked(client.request("GET", "/reservations/offerings", query=query))
        print(json.dumps(found, indent=2) if args.json else offerings_table(found) + left_out_lines(found))
        return 0
    if args.instance_type or args.count != 1 or args.days != 1:
        raise UsageError("--type, --count and --days go with --offerings", field="--offerings")
    held = checked(client.request("GET", "/reservations"))
    print(json.dumps(held, indent=2) if args.json else reservations_table(held) + left_out_lines(held))
    return 0


def reservations_table(held: dict[str, Any]) -> str:
    rows = [
        [r["reservation_id"], "block" if r["capacity_block"] else "odcr", r["instance_type"], r["zone"], r["state"],
         f"{r['in_use']}/{r['total']}", r["idle"], (r["ends_at"] or "-")[:16], f"${r['idle_usd']:,.2f}"]
        for r in held["reservations"]
    ]  # fmt: skip
    if not rows:
        return "no Capacity Reservations or Capacity Blocks in this region"
    headers = ["reservation", "kind", "GPU type", "zone", "state", "in use", "idle", "ends (UTC)", "idle cost"]
    return table(headers, rows) + f"\nidle cost recorded: ${held['idle_usd']:,.2f}"


def offerings_table(found: dict[str, Any]) -> str:
    rows = [
        [o["offering_id"], o["instance_type"], o["zone"], o["count"], o["starts_at"][:16], o["ends_at"][:16],
         f"{o['hours']:g}", f"${o['upfront_usd']:,.2f}"]
        for o in found["offerings"]
    ]  # fmt: skip
    if not rows:
        return "no Capacity Block offerings for that type, count and duration"
    headers = ["offering", "GPU type", "zone", "count", "starts (UTC)", "ends (UTC)", "hours", "upfront"]
    return table(headers, rows) + "\n" + wrapped(how_to_buy(found), "  ", "")


def how_to_buy(found: dict[str, Any]) -> str:
    """The next step: the command that buys one, where the deployment buys Capacity Blocks; else how to let it."""
    if found.get("purchase_allowed"):
        return "buy one with: gpupilot reserve OFFERING --yes --max-upfront-usd USD"
    return (
        "this deployment does not buy Capacity Blocks (gpupilot reserve is refused): deploy it with the context "
        "max_capacity_block_upfront_usd (cdk.json) to buy them here, or buy one in the EC2 console"
    )


def left_out_lines(answer: dict[str, Any]) -> str:
    """One line per capacity region the answer could not read, with AWS's words (none: nothing)."""
    return "".join(f"\nregion {region} left out: {why}" for region, why in sorted(answer.get("left_out", {}).items()))
