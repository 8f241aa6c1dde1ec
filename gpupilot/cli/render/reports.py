"""The sweep's health report and the cost report in words and tables."""

from __future__ import annotations

from typing import Any

from gpupilot.cli.layout import table, wrapped


def summary_words(summary: dict[str, int]) -> str:
    """A sweep's summary in words: `2 findings (1 ECS_AGENT_NOT_REGISTERED, 1 IDLE_POOL); 3 live jobs; ...`."""
    counts = dict(summary)
    found = counts.pop("findings", 0)
    regions = counts.pop("regions", 1)
    said = {
        "live_jobs": "live jobs",
        "vanished_jobs": "jobs Batch no longer knows",
        "reconciled_events": "missed Batch events reconciled",
    }
    extras = [f"{counts.pop(key)} {words}" for key, words in said.items() if key in counts]
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items(), key=lambda item: (-item[1], item[0])))
    head = (
        "no findings" if not found else f"{found} finding{'s' if found != 1 else ''}" + (f" ({kinds})" if kinds else "")
    )
    # A deployment of several capacity regions says how many the sweep covered.
    swept = [f"{regions} capacity regions swept"] if regions > 1 else []
    return "; ".join([head, *extras, *swept])


def health(report: dict[str, Any]) -> str:
    """A sweep's summary in words, then each finding: its severity, kind, resource and jobs, and its
    recommendation under it."""
    if not report.get("swept_at"):
        return "no sweep has run yet (run `gpupilot sweep`)"
    several = report["summary"].get("regions", 1) > 1
    said = f"sweep {report.get('sweep_id') or '-'} at {report['swept_at']}: {summary_words(report['summary'])}"
    lines = [wrapped(said, "  ", "")]
    for finding in report["findings"]:
        jobs = f"  jobs {', '.join(finding['jobs'])}" if finding.get("jobs") else ""
        # A deployment of several regions says the region of each finding's resource.
        where = f" ({finding['region']})" if finding.get("region") and several else ""
        lines.append(
            wrapped(f"{finding['severity']:<8}  {finding['kind']}  {finding['resource']}{where}{jobs}", "      ", "  ")
        )
        lines.append(wrapped(finding["recommendation"], "      "))
        if finding.get("action"):
            lines.append(wrapped(f"done: {finding['action']}", "      "))
    return "\n".join(lines)


def costs(report: dict[str, Any]) -> str:
    """The cost by one dimension (the report's group_by; by day when it has no groups), and what each row added to the
    bill, so that its rows add up to the total; then the total and, next to it, the waste (instances, or shares of
    them, that served no job)."""
    if report.get("groups"):
        groups = [(g["key"], g["attempts"], f"{g['usd']:.6f}", _marginal(g)) for g in report["groups"]]
        key = report.get("group_by") or "key"
        out = table((key, "attempts", "usd", "marginal"), groups, flexible=key)
    else:
        days = [(day["date"], f"{day['usd']:.6f}", _marginal(day)) for day in report.get("days", [])]
        out = table(("day", "usd", "marginal"), days)
    waste = report.get("waste") or {}
    reasons = sorted((waste.get("by_reason") or {}).items(), key=lambda item: (-item[1], item[0]))
    waste_line = (
        f"waste ${waste.get('usd', 0):.6f}  (instances, or shares of them, that served no job; not in the total)"
    )
    if reasons:
        waste_line += ": " + ", ".join(f"{reason} ${usd:.6f}" for reason, usd in reasons)
    total = f"total ${report.get('total_usd', 0):.6f}  marginal ${_marginal(report)}"
    if _marginal(report) != f"{report.get('total_usd', 0):.6f}":
        total += "  (reserved capacity is paid for whether used or not: its idle hours are reservation_idle waste)"
    return out + "\n" + wrapped(total, "  ", "") + "\n" + wrapped(waste_line, "  ", "")


def _marginal(row: dict[str, Any]) -> str:
    """What a group, a day or the total added to the bill (a report from before the API said so: all of it)."""
    return f"{row.get('marginal_usd', row.get('usd', row.get('total_usd', 0))):.6f}"
