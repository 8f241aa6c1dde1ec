"""A plan and a submit in words: the candidates in attempt order, the first choice and its fallbacks."""

from __future__ import annotations

from typing import Any

from gpupilot.cli import money
from gpupilot.cli.layout import table, wrapped

REASONS_SHOWN = 5


def plan_table(plan: dict[str, Any], top: int = 10) -> str:
    """Candidates in attempt order with price, capacity, score and why; then the warnings. With none, the first
    reasons instead (the cheapest fix first, as the API orders them)."""
    if not plan["candidates"]:
        lines = ["no GPU offering can serve this request; the first reasons:"]
        lines.extend(
            wrapped(f"{r['instance_type']}: {r['reason']}", "    ", "  ") for r in plan["rejected"][:REASONS_SHOWN]
        )
        more = len(plan["rejected"]) - REASONS_SHOWN
        if more > 0:
            lines.append(f"  ... {more} more (--json for all)")
        lines.extend(wrapped(warning, "    ", "  warning: ") for warning in plan.get("warnings", []))
        return "\n".join(lines)
    # A deployment of several capacity regions shows each candidate's; a home-only one's table reads as before.
    several = len(plan.get("regions") or []) > 1
    rows = [
        (
            position, c["instance_type"], *([c.get("region") or "-"] if several else []),
            f"{c['gpus']}x {c['gpu_model']}", f"{c['gpu_memory_gib']:g}", c["vcpus"], money.billed_as(c),
            "?" if c.get("hourly_usd") is None else f"{c['hourly_usd']:.4f}", money.marginal_cell(c),
            f"{c['score']:.3f}", c.get("why", ""),
        )
        for position, c in enumerate(plan["candidates"][:top], start=1)
    ]  # fmt: skip
    # $/hour: what the account pays for an hour of the instance; marginal: what that adds to its bill (a reservation
    # with room: nothing, it is paid for either way).
    headers = ("#", "GPU type", *(["region"] if several else []), "GPUs", "GiB/GPU", "vCPU", "capacity",
               "$/hour", "marginal", "score", "why")  # fmt: skip
    out = table(headers, rows, beneath="why")
    more = len(plan["candidates"]) - top
    lines = [out]
    if more > 0:
        lines.append(f"  ... {more} more candidates")
    # Each capacity region the plan weighed or left out, and why one gave no candidate.
    for region in plan.get("regions") or []:
        if region.get("left_out"):
            lines.append(wrapped(f"region {region['region']} left out: {region['left_out']}", "    ", "  "))
    lines.append(f"  {len(plan['rejected'])} GPU offerings rejected (see --json for reasons)")
    lines.extend(wrapped(warning, "    ", "  warning: ") for warning in plan.get("warnings", []))
    return "\n".join(lines)


def _offering(candidate: dict[str, Any], with_region: bool = False) -> str:
    """`g6.xlarge (1x L4, on-demand) $0.8048/h`: a candidate in a few words, with its price for this job and what it
    adds to the bill where that differs (a reservation's `, adds $0/h`), and, `with_region`, ` in us-west-2`."""
    where = f" in {candidate['region']}" if with_region and candidate.get("region") else ""
    return (
        f"{candidate['instance_type']} ({candidate['gpus']}x {candidate['gpu_model']}, {money.billed_as(candidate)}) "
        f"{money.hourly(candidate)}{where}"
    )


def launch_summary(candidates: list[dict[str, Any]], warnings: list[str], max_attempts: int | None = None) -> str:
    """What a submit starts with: the first choice and its price for this job (the job pays the whole instance),
    the fallbacks the workflow may try after it, in order, and the warnings."""
    tried = candidates[: max_attempts or len(candidates)]
    if not tried:
        return "no GPU offering can serve this request"
    # The first choice's region always; each fallback's when they are in several regions.
    several = len({c.get("region") for c in tried}) > 1
    region = tried[0].get("region")
    first = f"{_offering(tried[0])} for this job" + (f", in {region}" if region else "")
    lines = [wrapped(first, " " * 14, "first choice  ")]
    fallbacks = tried[1:]
    shown = fallbacks[:3]
    if shown:
        more = f", and {len(fallbacks) - len(shown)} more" if len(fallbacks) > len(shown) else ""
        offered = ", then ".join(_offering(c, several) for c in shown)
        lines.append(wrapped(offered + more, " " * 14, "fallbacks     "))
    else:
        lines.append("fallbacks     none")
    lines.extend(wrapped(warning, " " * 14, "warning       ") for warning in warnings)
    return "\n".join(lines)


def submitted(answer: dict[str, Any]) -> str:
    """What `gpupilot submit` prints: the job id (and whether this key had submitted it already), what it starts
    with, and what may keep it waiting."""
    again = (
        "  (already submitted with this Idempotency-Key: nothing new started)"
        if answer.get("already_submitted")
        else ""
    )
    lines = [wrapped(f"submitted {answer['job_id']}{again}", "  ", "")]
    if answer.get("candidates"):
        lines.append(launch_summary(answer["candidates"], answer.get("warnings", [])))
    else:
        lines.extend(f"  warning: {warning}" for warning in answer.get("warnings", []))
    return "\n".join(lines)
