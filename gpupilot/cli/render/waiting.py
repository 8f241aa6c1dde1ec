"""What a waiting job is doing, in words: why it waits, what the workflow does next unless it starts, when it
entered its status, and the lines `--wait` prints as it moves on."""

from __future__ import annotations

import re
from typing import Any

from gpupilot.cli.layout import wrapped
from gpupilot.cli.render.times import clock, elapsed, utc


def progress_line(entry: dict[str, Any], job: dict[str, Any]) -> str:
    detail = ""
    if entry["status"] in ("PROVISIONING", "RUNNABLE", "STARTING", "RUNNING") and job.get("instance_type"):
        detail = f"  {job['instance_type']} ({job.get('gpu_model') or '?'})"
    return f"  {clock(entry['at'])}  {entry['status']:<12}{detail}"


def reason_line(reason: str, elapsed_seconds: float, then: str | None = None) -> str:
    """Why the job waits, said while it waits (and what happens next, if it is known)."""
    said = f"waiting {elapsed(elapsed_seconds)}: {reason}" + (f"; {then}" if then else "")
    return wrapped(said, " " * 18, " " * 16)


def next_action(job: dict[str, Any]) -> str | None:
    """What the workflow does next unless the job starts: `falls back to g6.xlarge (on-demand) at 12:41:07 UTC
    unless it starts` (`... (on-demand) in us-west-2 at ...` when it leaves the region the job waits in), `gives up
    at ...`, or `diagnoses at ...` while the cause is not known to be curable."""
    action = job.get("next_action")
    if not action:
        return None
    when = f"at {utc(action['at'])} unless it starts"
    candidate = action.get("candidate")
    following = f"{candidate['instance_type']} ({candidate['capacity']})" if candidate else None
    if candidate and candidate.get("region") and job.get("region") and candidate["region"] != job["region"]:
        following = f"{following} in {candidate['region']}"
    if action["action"] == "fall_back" and following:
        return f"falls back to {following} {when}"
    if action["action"] == "give_up":
        return f"gives up {when}"
    return f"diagnoses {when}" + (f"; it may then fall back to {following}" if following else "")


# A diagnosis category, the head of a reason said as `CATEGORY: reason`.
CATEGORY = re.compile(r"[A-Z][A-Z_]+")


def reason_key(reason: str | None) -> str | None:
    """What a reason is about, to say it once: a diagnosis's category (`ECS_AGENT_NOT_REGISTERED: ... (oldest 700 s)`
    says new numbers each time it is made), else its words."""
    if reason is None:
        return None
    head = reason.split(": ", 1)[0]
    return head if CATEGORY.fullmatch(head) else reason


def status_since(job: dict[str, Any]) -> str | None:
    """When the job entered the status it is in (ISO): the timeline entry that moved it there, a note being none (a
    note repeats the status before it); its last entry's time when its status is a step ahead of its timeline."""
    timeline = job.get("timeline") or []
    steps = [
        entry
        for index, entry in enumerate(timeline)
        if not (index and entry["status"] == timeline[index - 1]["status"] and entry.get("reason"))
    ]
    if steps and steps[-1]["status"] == job["status"]:
        return str(steps[-1]["at"])
    return str(timeline[-1]["at"]) if timeline else None


def waiting_reason(job: dict[str, Any]) -> str | None:
    """Why the job waits: Batch's words or the last diagnosis, else a diagnosis made on request (`explanation`)."""
    if job.get("reason"):
        return str(job["reason"])
    explanation = job.get("explanation")
    if explanation and job.get("status") not in ("SUCCEEDED", "FAILED", "CANCELLED"):
        return f"{explanation['category']}: {explanation['reason']}"
    return None


ATTEMPT_ENDED = ("SUCCEEDED", "FAILED", "CANCELLED", "NOT_SUBMITTED")


def earlier_diagnoses(job: dict[str, Any]) -> set[str]:
    """The diagnoses of the attempts the job has left (an earlier one, or one it fell back from), as its reason
    says them (`CATEGORY: reason`): a job falling back keeps the last one as its reason while the next begins."""
    attempts = job.get("attempts") or []
    return {
        f"{diagnosis['category']}: {diagnosis['reason']}"
        for number, attempt in enumerate(attempts, start=1)
        if (diagnosis := attempt.get("diagnosis"))
        and (number < len(attempts) or attempt.get("status") in ATTEMPT_ENDED)
    }


def status_line(job: dict[str, Any], elapsed_seconds: float) -> str:
    """A followed job in one line: its status, its GPU type, how long it has been in that status, and why it waits."""
    line = f"job {job['job_id']}  {job['status']}"
    if job.get("instance_type"):
        line += f"  {job['instance_type']} ({job.get('gpu_model') or '?'})"
    line += f"  {elapsed(elapsed_seconds)}"
    reason, then = waiting_reason(job), next_action(job)
    if reason:
        line += f"  waiting: {reason}"
    if then:
        line += f"; {then}" if reason else f"  {then}"
    return line
