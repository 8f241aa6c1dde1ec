"""Readable terminal output for the CLI (tables are plain text: they must read well in CI logs too)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [["" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(value.ljust(widths[i]) for i, value in enumerate(row)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


SHARE_BY = {"gpus": "GPUs", "vcpus": "vCPUs", "memory": "memory", "instance": "instance"}


def _clock(at: str) -> str:
    return at[11:23] if len(at) >= 23 else at


def progress_line(entry: dict[str, Any], job: dict[str, Any]) -> str:
    detail = ""
    if entry["status"] in ("PROVISIONING", "RUNNABLE", "STARTING", "RUNNING") and job.get("instance_type"):
        detail = f"  {job['instance_type']} ({job.get('gpu_model') or '?'})"
    return f"  {_clock(entry['at'])}  {entry['status']:<12}{detail}"


def reason_line(reason: str, elapsed_seconds: float) -> str:
    """Why the job waits, said while it waits."""
    return f"  {'':12}  waiting {elapsed_seconds:.0f} s: {reason}"


def plan_table(plan: dict[str, Any], top: int = 10) -> str:
    """Candidates in attempt order with price, capacity, score and why; then the warnings."""
    rows = [
        (
            position, c["instance_type"], f"{c['gpus']}x {c['gpu_model']}", f"{c['gpu_memory_gib']:g}", c["vcpus"],
            c["capacity"], "?" if c.get("hourly_usd") is None else f"{c['hourly_usd']:.4f}", f"{c['score']:.3f}",
            c.get("why", ""),
        )
        for position, c in enumerate(plan["candidates"][:top], start=1)
    ]  # fmt: skip
    out = table(("#", "instance type", "GPUs", "GiB/GPU", "vCPU", "capacity", "$/hour", "score", "why"), rows)
    more = len(plan["candidates"]) - top
    lines = [out]
    if more > 0:
        lines.append(f"  ... {more} more candidates")
    lines.append(f"  {len(plan['rejected'])} instance types rejected (see --json for reasons)")
    lines.extend(f"  warning: {warning}" for warning in plan.get("warnings", []))
    return "\n".join(lines)


def submitted(answer: dict[str, Any]) -> str:
    """What `gpupilot submit` prints: the job id, and what may keep it waiting."""
    lines = [f"submitted {answer['job_id']}"]
    lines.extend(f"  warning: {warning}" for warning in answer.get("warnings", []))
    return "\n".join(lines)


def _runtime(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.2f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.1f} s"


def job_summary(job: dict[str, Any]) -> str:
    attempt = job["attempts"][-1] if job.get("attempts") else {}
    cost = job.get("cost")
    rows: list[tuple[str, str]] = [
        ("job id", job["job_id"]),
        ("name", job["name"]),
        ("status", job["status"]),
        (
            "GPU type",
            f"{job.get('instance_type') or '-'} ({job.get('gpu_model') or '-'}, {attempt.get('capacity', '-')})",
        ),
        ("queue", attempt.get("job_queue") or "-"),
        ("batch job", attempt.get("batch_job_id") or "-"),
        ("attempts", str(len(job.get("attempts") or []))),
    ]
    if cost:
        rows.append(("runtime", _runtime(cost["runtime_seconds"])))
        rows.append(
            (
                "cost",
                f"${cost['usd']:.6f}  = ${cost['hourly_usd']}/h x {_runtime(cost['runtime_seconds'])}"
                f" x {cost['gpu_share']:g} share by {SHARE_BY.get(cost.get('share_by', 'gpus'), 'GPUs')}"
                f" ({cost['pricing']})",
            )
        )
    if job.get("error"):
        rows.append(("error", job["error"]))
    if job.get("reason"):
        rows.append(("waiting", job["reason"]))
    explanation = job.get("explanation")
    if explanation:
        rows.append(("diagnosis", f"{explanation['category']}: {explanation['reason']}"))
        rows.append(("recommended", explanation["recommendation"]))
    for attempt_row in job.get("attempts") or []:
        if attempt_row.get("diagnosis"):
            diagnosis = attempt_row["diagnosis"]
            rows.append(
                (f"diagnosis {attempt_row['instance_type']}", f"{diagnosis['category']}: {diagnosis['reason']}")
            )
    rows.append(("timeline", " -> ".join(f"{e['status']} {_clock(e['at'])}" for e in job.get("timeline") or [])))
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def job_list(result: dict[str, Any]) -> str:
    rows = [
        (
            j["job_id"], j["name"], j["status"], j.get("instance_type") or "-",
            f"{j['cost']['usd']:.6f}" if j.get("cost") else "-", j["created_at"],
        )
        for j in result["jobs"]
    ]  # fmt: skip
    out = table(("job id", "name", "status", "GPU type", "cost $", "created"), rows)
    return out + (f"\nnext page: --next-token {result['next_token']}" if result.get("next_token") else "")


def health(report: dict[str, Any]) -> str:
    if not report.get("swept_at"):
        return "no sweep has run yet (run `gpupilot sweep`)"
    rows = [
        (f["severity"], f["kind"], f["resource"], ",".join(f.get("jobs") or []), f["recommendation"])
        for f in report["findings"]
    ]
    head = f"sweep {report.get('sweep_id') or '-'} at {report['swept_at']}: {report['summary']}"
    return head + ("\n" + table(("severity", "kind", "resource", "jobs", "recommendation"), rows) if rows else "")


def costs(report: dict[str, Any]) -> str:
    """The report's groups when it has them, else each day by GPU type, job name and capacity type."""
    if report.get("groups"):
        groups = [(g["key"], g["attempts"], f"{g['usd']:.6f}") for g in report["groups"]]
        out = table((report.get("group_by") or "key", "attempts", "usd"), groups)
    else:
        rows: list[tuple[Any, ...]] = [
            (day["date"], kind, key, f"{usd:.6f}")
            for day in report.get("days", [])
            for kind, field in (
                ("gpu type", "by_gpu_type"),
                ("job name", "by_job_name"),
                ("capacity", "by_capacity_type"),
            )
            for key, usd in sorted(day.get(field, {}).items())
        ]
        out = table(("date", "by", "key", "usd"), rows)
    return out + f"\ntotal ${report.get('total_usd', 0):.6f}"
