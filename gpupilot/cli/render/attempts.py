"""A job's attempts in words: each one's line, Batch's retries of it, what they cost, and where the job tried."""

from __future__ import annotations

from typing import Any

from gpupilot.cli import money
from gpupilot.cli.render.times import utc

FINISHED = ("SUCCEEDED", "FAILED", "CANCELLED")


def on_attempt(job: dict[str, Any]) -> int | None:
    """The attempt the job is on, from 1 (the API says it; an answer from before it did: its latest)."""
    return job.get("attempt") or len(job.get("attempts") or []) or None


def priced_numbers(job: dict[str, Any]) -> list[int]:
    """The numbers of the job's attempts that have a cost."""
    return [number for number, a in enumerate(job.get("attempts") or [], start=1) if a.get("cost")]


def retry_words(retry: dict[str, Any]) -> str:
    """`Batch attempt 1 on host i-0abc: Task failed to start; CannotStartContainerError: ...; host i-0abc quarantined
    at 10:00:09 UTC; Batch ran it again`: one of Batch's retries of an attempt, where it ran and why it ended."""
    host = retry.get("host") or (retry.get("container_instance_arn") or "").rsplit("/", 1)[-1] or "an unknown host"
    quarantined = f"; host {host} quarantined at {utc(retry['quarantined_at'])}" if retry.get("quarantined_at") else ""
    return f"Batch attempt {retry['batch_attempt']} on host {host}: {retry['reason']}{quarantined}; Batch ran it again"


def cost_rows(job: dict[str, Any], cost: dict[str, Any]) -> list[tuple[str, str]]:
    """The job's cost, multiplying out as printed: the product of the attempt it is on when that one alone is priced;
    else the sum of the attempts priced so far (each on its own row), never an earlier attempt's price beside the GPU
    type of a later one; and what it added to the bill (nothing in a reservation with room)."""
    priced, number = priced_numbers(job), on_attempt(job)
    if not priced or priced == [number]:
        total = f"{money.product(cost)} ({cost['pricing']})"
    else:
        which = f"the sum of its {len(priced)} priced attempts (each below)" if len(priced) > 1 else None
        total = f"{money.dollars(cost['usd'])}, {which or f'what attempt {priced[0]} cost (below)'}"
        if number not in priced and job["status"] not in FINISHED:
            total += f"; attempt {number}'s cost is added when it ends"
    attempts = job.get("attempts") or []
    reserved = [
        a["reservation"] for a in attempts if a.get("cost") and a.get("reservation") and not money.added(a["cost"])
    ]
    paid = f": {', '.join(reserved)} paid for whether used or not" if reserved else ""
    return [("cost", total), ("marginal", f"{money.dollars(money.added(cost))} added to the bill{paid}")]


def tried(job: dict[str, Any]) -> str:
    """Which regions and markets the job tried, in order, and why it left each (the regions it may run in after)."""
    said = []
    for attempt in job.get("attempts") or []:
        why = (attempt.get("diagnosis") or {}).get("category") or attempt["status"]
        where = f" in {attempt['region']}" if attempt.get("region") and regional(job) else ""
        said.append(f"{money.billed_as(attempt)} {attempt['instance_type']}{where} ({why})")
    allowed = (job.get("request") or {}).get("regions")
    return "; ".join(said) + (f"  [regions allowed: {', '.join(allowed)}]" if allowed else "")


def regional(job: dict[str, Any]) -> bool:
    """Whether the job's regions are worth naming: it named regions, or its attempts ran in more than one (a job
    of a home-only deployment reads as before regions)."""
    attempts = job.get("attempts") or []
    return bool((job.get("request") or {}).get("regions")) or len({a.get("region") for a in attempts}) > 1


def attempt_line(attempt: dict[str, Any], with_region: bool = False) -> str:
    """One attempt: where (its region too, `with_region`) and how it is billed, how it ended, what it cost (as a
    product that multiplies out as printed, and what it added to the bill where that differs), and each host Batch
    lost under it (a spot reclaim)."""
    cost = attempt.get("cost")
    priced = money.product(cost) if cost else "-"
    if cost and money.added(cost) != cost["usd"]:
        priced += f", adds {money.dollars(money.added(cost))}"
    where = f" {attempt['region']}" if attempt.get("region") and with_region else ""
    where += f" in {attempt['reservation']}" if attempt.get("reservation") else ""
    line = f"{attempt['instance_type']} {money.billed_as(attempt)}{where}  {attempt['status']}  {priced}"
    retried = [retry["reason"] for retry in attempt.get("batch_retries") or []]
    for said in attempt.get("host_terminations") or []:
        if not any(reason.startswith(said) for reason in retried):  # a retry's row says it already
            line += f"  {said}"
    return line
