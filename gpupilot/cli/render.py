"""Readable terminal output for the CLI (tables are plain text: they must read well in CI logs too)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import Any, TextIO

from gpupilot.cli import money
from gpupilot.cli.layout import fit_to as fit_to  # the CLI sets the width here, as before the layout had a module
from gpupilot.cli.layout import listed, table, wrapped


def _clock(at: str) -> str:
    return at[11:23] if len(at) >= 23 else at


def progress_line(entry: dict[str, Any], job: dict[str, Any]) -> str:
    detail = ""
    if entry["status"] in ("PROVISIONING", "RUNNABLE", "STARTING", "RUNNING") and job.get("instance_type"):
        detail = f"  {job['instance_type']} ({job.get('gpu_model') or '?'})"
    return f"  {_clock(entry['at'])}  {entry['status']:<12}{detail}"


def reason_line(reason: str, elapsed_seconds: float, then: str | None = None) -> str:
    """Why the job waits, said while it waits (and what happens next, if it is known)."""
    said = f"waiting {elapsed(elapsed_seconds)}: {reason}" + (f"; {then}" if then else "")
    return wrapped(said, " " * 18, " " * 16)


def _utc(at: str) -> str:
    """`12:41:07 UTC` from an ISO time."""
    return f"{at[11:19]} UTC" if len(at) >= 19 else at


def next_action(job: dict[str, Any]) -> str | None:
    """What the workflow does next unless the job starts: `falls back to g6.xlarge (on-demand) at 12:41:07 UTC
    unless it starts` (`... (on-demand) in us-west-2 at ...` when it leaves the region the job waits in), `gives up
    at ...`, or `diagnoses at ...` while the cause is not known to be curable."""
    action = job.get("next_action")
    if not action:
        return None
    when = f"at {_utc(action['at'])} unless it starts"
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


def elapsed(seconds: float) -> str:
    """`42 s`, `3 min 05 s`, `2 h 07 min`."""
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


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


class WaitProgress:
    """What a job does while the CLI waits for it, on stderr: a live status line (rich) when stderr is a terminal,
    else one plain line each time the status or the wait reason changes (`plain=False`: none). Lines meant for
    stdout go through `stdout` so that they never break the live line."""

    def __init__(self, stream: TextIO | None = None, plain: bool = True, live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.plain = plain
        # A terminal that cannot move its cursor (TERM=dumb: an editor's shell, some CI consoles) gets plain lines.
        terminal = self.stream.isatty() and os.environ.get("TERM") != "dumb"
        self.live_wanted = terminal if live is None else live
        self._seen: tuple[str, int | None, str | None, str | None] | None = None
        self._live: Any = None
        self._line: _LiveLine | None = None

    def __enter__(self) -> WaitProgress:
        if self.live_wanted:
            from rich.console import Console
            from rich.live import Live

            self._line = _LiveLine()
            console = Console(file=self.stream, force_terminal=True)
            self._live = Live(self._line, console=console, transient=True, redirect_stdout=False, redirect_stderr=False)
            self._live.start(refresh=True)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def update(self, job: dict[str, Any], elapsed_seconds: float) -> None:
        """The job as the last poll saw it, `elapsed_seconds` into the status it is in. A plain line only when
        something changed: the status, the attempt, what the job waits for (not a diagnosis made again with newer
        numbers)."""
        if self._line is not None:
            self._line.show(job, elapsed_seconds)
            return
        seen = (job["status"], job.get("attempt"), job.get("instance_type"), reason_key(waiting_reason(job)))
        if self.plain and seen != self._seen:
            print(status_line(job, elapsed_seconds), file=self.stream, flush=True)
        self._seen = seen

    def stdout(self, write: Callable[[str], None]) -> Callable[[str], None]:
        """`write`, pausing the live line around it (stdout and stderr are often the same terminal)."""

        def paused(text: str) -> None:
            if self._live is None:
                write(text)
                return
            self._live.stop()
            write(text)
            sys.stdout.flush()
            self._live.start(refresh=True)

        return paused


class _LiveLine:
    """The live line's content: the job's last state, with the elapsed time counting on between polls."""

    def __init__(self) -> None:
        import time

        from rich.spinner import Spinner

        self._clock = time.monotonic
        self._spinner = Spinner("dots")
        self._job: dict[str, Any] | None = None
        self._elapsed_at = (0.0, self._clock())

    def show(self, job: dict[str, Any], elapsed_seconds: float) -> None:
        self._job = job
        self._elapsed_at = (elapsed_seconds, self._clock())

    def __rich__(self) -> Any:
        from rich.text import Text

        seconds, at = self._elapsed_at
        now = self._clock()
        words = "waiting for the job" if self._job is None else status_line(self._job, seconds + now - at)
        # One line, cut to the terminal's width: a wrapped line could not be redrawn in place.
        frame = self._spinner.render(now)  # a Text: the spinner has no text of its own
        return Text.assemble(frame if isinstance(frame, Text) else "", " ", words, no_wrap=True, overflow="ellipsis")


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


FINISHED = ("SUCCEEDED", "FAILED", "CANCELLED")


def on_attempt(job: dict[str, Any]) -> int | None:
    """The attempt the job is on, from 1 (the API says it; an answer from before it did: its latest)."""
    return job.get("attempt") or len(job.get("attempts") or []) or None


def priced_numbers(job: dict[str, Any]) -> list[int]:
    """The numbers of the job's attempts that have a cost."""
    return [number for number, a in enumerate(job.get("attempts") or [], start=1) if a.get("cost")]


def timeline_entries(job: dict[str, Any]) -> list[str]:
    """`RUNNING 10:00:05.000`, each entry of the timeline; a note (an entry that repeats the status before it: a
    status is appended only when the job moves on) says what it notes instead, `host i-... quarantined 10:00:09.000`."""
    said: list[str] = []
    before = None
    for entry in job.get("timeline") or []:
        note = entry["status"] == before and entry.get("reason")
        said.append(f"{str(entry['reason']).split(': ', 1)[0] if note else entry['status']} {_clock(entry['at'])}")
        before = entry["status"]
    return said


def retry_words(retry: dict[str, Any]) -> str:
    """`Batch attempt 1 on host i-0abc: Task failed to start; CannotStartContainerError: ...; host i-0abc quarantined
    at 10:00:09 UTC; Batch ran it again`: one of Batch's retries of an attempt, where it ran and why it ended."""
    host = retry.get("host") or (retry.get("container_instance_arn") or "").rsplit("/", 1)[-1] or "an unknown host"
    quarantined = f"; host {host} quarantined at {_utc(retry['quarantined_at'])}" if retry.get("quarantined_at") else ""
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
