"""A job in rows (`gpupilot status`) and the jobs in a table (`gpupilot jobs`)."""

from __future__ import annotations

from typing import Any

from gpupilot.cli import money
from gpupilot.cli.layout import listed, table, wrapped
from gpupilot.cli.render.attempts import (
    FINISHED,
    attempt_line,
    cost_rows,
    on_attempt,
    priced_numbers,
    regional,
    retry_words,
    tried,
)
from gpupilot.cli.render.times import clock
from gpupilot.cli.render.waiting import next_action


def _runtime(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.2f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.1f} s"


def job_summary(job: dict[str, Any], explain: bool = False) -> str:
    """The job in rows: the summary rows describe the attempt it is on, each earlier attempt has a row of its own
    (and each of Batch's retries of one, with its host); `explain` (status --explain) always says which regions and
    markets it tried and why it left each, even after one attempt."""
    attempts = job.get("attempts") or []
    number = on_attempt(job)
    attempt = attempts[number - 1] if number and number <= len(attempts) else {}
    billed = job.get("capacity_type") or (money.billed_as(attempt) if attempt else "-")
    cost = job.get("cost")
    rows: list[tuple[str, str]] = [
        ("job id", job["job_id"]),
        ("name", job["name"]),
        ("status", job["status"]),
        ("GPU type", f"{job.get('instance_type') or '-'} ({job.get('gpu_model') or '-'}, {billed})"),
        ("region", job.get("region") or attempt.get("region") or "-"),
        ("queue", attempt.get("job_queue") or "-"),
        ("batch job", attempt.get("batch_job_id") or "-"),
        ("attempts", str(max(len(attempts), number or 0))),
    ]
    if cost:
        if job["status"] in FINISHED or priced_numbers(job) == [number]:
            rows.append(("runtime", _runtime(cost["runtime_seconds"])))
        rows += cost_rows(job, cost)
        if cost.get("reclaims"):
            rows.append(("reclaims", money.reclaims(cost["reclaims"])))
        if cost["gpu_share"] < 1 and cost.get("instance_usd") is not None:
            # The rest of the instance is the account's bill too: waste, unless other jobs shared it.
            rest = "the rest is unused_share waste unless other jobs shared it"
            rows.append(("instance", f"${cost['instance_usd']:.6f}  ({rest})"))
    if job.get("error"):
        rows.append(("error", job["error"]))
    if job.get("reason"):
        rows.append(("waiting", job["reason"]))
    if next_action(job):
        rows.append(("next", str(next_action(job))))
    explanation = job.get("explanation")
    if explanation:
        rows.append(("diagnosis", f"{explanation['category']}: {explanation['reason']}"))
        rows.append(("recommended", explanation["recommendation"]))
    several = max(len(attempts), number or 0) > 1
    if attempts and (explain or explanation or several):
        rows.append(("tried", tried(job)))
    for position, attempt_row in enumerate(attempts, start=1):
        if attempt_row.get("diagnosis"):
            diagnosis = attempt_row["diagnosis"]
            rows.append(
                (f"diagnosis {attempt_row['instance_type']}", f"{diagnosis['category']}: {diagnosis['reason']}")
            )
        retries = attempt_row.get("batch_retries") or []
        shown = attempt_row.get("host_terminations") or attempt_row.get("reservation") or retries
        if shown or several:
            rows.append((f"attempt {position}", attempt_line(attempt_row, regional(job))))
        rows.extend(("retried", retry_words(retry)) for retry in retries)
    width = max(len(k) for k, _ in [*rows, ("timeline", "")])
    under = " " * (width + 2)
    # Each value wraps under its own start, after its label; the timeline between its entries.
    lines = [wrapped(v, under, f"{k.ljust(width)}  ") for k, v in rows]
    lines.append(listed(timeline_entries(job), " -> ", under, f"{'timeline'.ljust(width)}  "))
    return "\n".join(lines)


def timeline_entries(job: dict[str, Any]) -> list[str]:
    """`RUNNING 10:00:05.000`, each entry of the timeline; a note (an entry that repeats the status before it: a
    status is appended only when the job moves on) says what it notes instead, `host i-... quarantined 10:00:09.000`."""
    said: list[str] = []
    before = None
    for entry in job.get("timeline") or []:
        note = entry["status"] == before and entry.get("reason")
        said.append(f"{str(entry['reason']).split(': ', 1)[0] if note else entry['status']} {clock(entry['at'])}")
        before = entry["status"]
    return said


def _minute(at: str) -> str:
    """`11-27 08:45Z` from an ISO time: the list's created column, month, day and minute in UTC (`status` and --json
    have it in full)."""
    return f"{at[5:10]} {at[11:16]}Z" if len(at) >= 16 else at


def job_list(result: dict[str, Any]) -> str:
    rows = [
        (
            j["job_id"], j["name"], j["status"], j.get("instance_type") or "-",
            f"{j['cost']['usd']:.6f}" if j.get("cost") else "-", _minute(j["created_at"]),
        )
        for j in result["jobs"]
    ]  # fmt: skip
    out = table(("job id", "name", "status", "GPU type", "cost $", "created"), rows, flexible="name")
    return out + (f"\nnext page: --next-token {result['next_token']}" if result.get("next_token") else "")
