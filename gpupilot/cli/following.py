"""Following a job through the API: its status until it ends, explained while it waits with no reason given, and its
attempts' logs as they are written."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import quote

from gpupilot.cli import render
from gpupilot.cli.arguments import (
    ServiceError,
    checked,
)
from gpupilot.cli.client import ApiClient

FINISHED = {"SUCCEEDED", "FAILED", "CANCELLED"}
# An attempt's statuses once it has ended (an attempt a job fell back from ended FAILED).
ATTEMPT_ENDED = {"SUCCEEDED", "FAILED", "NOT_SUBMITTED"}


# While a job has waited this long with no reason given, `--wait` asks for an explanation, and again this often (a
# diagnosis reads the job, its pool and its fleet: a few AWS calls; a job about to start needs none). A job that has
# waited this long already when following begins is explained at once.
EXPLAIN_EVERY_SECONDS = 10.0


def follow(
    client: ApiClient,
    job_id: str,
    out: Callable[[str], None],
    poll_seconds: float = 0.5,
    limit_seconds: float = 0,
    on_poll: Callable[[dict[str, Any], float], None] | None = None,
) -> dict[str, Any]:
    """Poll the job and print each new status, and each new reason while it waits, until it ends; `on_poll` sees
    the job and how long it has been in its status (by the API's clock) after every poll."""
    seen = 0
    said_before: set[str] = set()  # a reason is said once: said again under a later line, it reads as that line's
    said_keys: set[tuple[int | None, str | None]] = set()  # and a diagnosis made again, with newer numbers, is not new
    started = time.monotonic()
    explained: tuple[float, dict[str, Any]] | None = None  # when the last explanation was asked, and the job it gave
    attempt = None
    while True:
        response = client.request("GET", f"/jobs/{job_id}")
        job = checked(response)
        waited = in_status_seconds(job, response.headers)
        if not unexplained(job):
            explained = None
        elif explained is not None and _same_wait(explained[1], job):
            if time.monotonic() - explained[0] < EXPLAIN_EVERY_SECONDS:
                # Between explanations the last one stands: the job's words do not come and go with each poll.
                job = job | {key: explained[1].get(key) for key in ("explanation", "next_action")}
            else:
                explained = _explain(client, job_id)
                job = explained[1]
        elif waited >= EXPLAIN_EVERY_SECONDS:
            # Batch gives no reason, and the job has waited long enough to need one: what --explain says, at once.
            explained = _explain(client, job_id)
            job = explained[1]
        timeline = job["timeline"]
        said, earlier = render.waiting_reason(job), render.earlier_diagnoses(job)
        key = (render.on_attempt(job), render.reason_key(said))
        if seen and len(timeline) > seen:
            # The entry already shown was explained as the job moved on (the diagnosis that made it fall back): its
            # reason goes under it, before the next entries, never under the fallback's line as if the new type
            # waited for it.
            # So does the diagnosis of an earlier attempt, still the job's reason as its fallback begins.
            for reason in (timeline[seen - 1].get("reason"), said if said in earlier else None):
                shown = reason in said_before or (attempt, render.reason_key(reason)) in said_keys
                if reason and not shown:
                    out(render.reason_line(reason, waited))
                    said_before.add(reason)
        for entry in timeline[seen:]:
            out(render.progress_line(entry, job))
        seen = len(timeline)
        if said in earlier:
            said = None  # an earlier attempt's: said under its own lines, or not at all
        if said and said not in said_before and key not in said_keys:
            if said not in {entry.get("reason") for entry in timeline[:-1]}:
                out(render.reason_line(said, waited, render.next_action(job)))
            said_before.add(said)
            said_keys.add(key)
        attempt = key[0]
        if on_poll is not None:
            on_poll(job, waited)
        if job["status"] in FINISHED:
            return dict(job)
        if limit_seconds and time.monotonic() - started > limit_seconds:
            raise ServiceError(f"job {job_id} still {job['status']} after {limit_seconds:.0f} s")
        time.sleep(poll_seconds)


def _explain(client: ApiClient, job_id: str) -> tuple[float, dict[str, Any]]:
    """The job with what --explain says of its wait now, and when it was asked."""
    return time.monotonic(), dict(checked(client.request("GET", f"/jobs/{job_id}", query={"explain": "true"})))


def _same_wait(before: dict[str, Any], job: dict[str, Any]) -> bool:
    """Whether the job still waits as it did when `before` was explained: the same status, on the same attempt."""
    return (before["status"], render.on_attempt(before)) == (job["status"], render.on_attempt(job))


def in_status_seconds(job: dict[str, Any], headers: Mapping[str, str]) -> float:
    """How long the job has been in its status: since the timeline entry that moved it there, by the API's clock (its
    answer's Date) so that a skewed local clock cannot shift it; by this machine's when the answer has none."""
    since = render.status_since(job)
    if since is None:
        return 0.0
    try:
        now = parsedate_to_datetime(headers["date"])
    except (KeyError, TypeError, ValueError, IndexError):
        now = datetime.now(UTC)
    entered = datetime.fromisoformat(since.replace("Z", "+00:00"))
    return max(0.0, (now - entered).total_seconds())


def unexplained(job: dict[str, Any]) -> bool:
    """A job waiting for its GPU with no reason given (Batch's words, or a diagnosis): one an explanation helps."""
    return job["status"] == "RUNNABLE" and not job.get("reason")


# How often `logs --follow` asks for new lines once it has read all there are.
LOG_POLL_SECONDS = 1.0


def print_logs(
    client: ApiClient,
    job_id: str,
    attempt: int | None,
    follow_job: bool,
    out: Callable[[dict[str, Any]], None],
    say: Callable[[str], None],
    poll_seconds: float | None = None,
) -> dict[str, Any]:
    """Every line of the attempt's stream, oldest first, page after page (CloudWatch Logs' end of stream: the same
    token back); following, on until the job has ended and its last lines are read. The last page is returned."""
    # Read when called, not when defined: a default of LOG_POLL_SECONDS would be fixed at import.
    poll_seconds = LOG_POLL_SECONDS if poll_seconds is None else poll_seconds
    path = f"/jobs/{quote(job_id, safe='')}/logs"
    token: str | None = None
    stream: str | None = None
    waiting_said = False
    while True:
        response = client.request("GET", path, query={"attempt": attempt, "next_token": token})
        if follow_job and attempt is None and response.status == 404 and _no_attempt_yet(response.body):
            # Followed right after submitting: the job is still choosing its GPU. Wait for its first attempt, unless
            # the job ends without one (nothing could serve it).
            job = checked(client.request("GET", f"/jobs/{quote(job_id, safe='')}"))
            if job["status"] in FINISHED:
                say(f"job {job_id} ended {job['status']} without an attempt: no log stream")
                return dict(job)
            if not waiting_said:
                say(f"job {job_id} is {job['status']}: waiting for its first attempt (--follow)")
                waiting_said = True
            time.sleep(poll_seconds)
            continue
        page = checked(response)
        if page.get("log_stream") != stream:
            moved = stream is not None
            stream = page.get("log_stream")
            say(f"attempt {page['attempt']} ({page['attempt_status']}): {page['log_group']} {stream}")
            if moved:
                # Followed without --attempt, the job fell back and its next attempt runs: read its stream anew.
                token = None
                continue
        for event in page["events"]:
            out(event)
        # The job has ended, or the attempt asked for has (the job going on to another): nothing more will come.
        attempt_over = attempt is not None and page["attempt_status"] in ATTEMPT_ENDED
        ended = page["status"] in FINISHED or attempt_over
        read_all = page.get("next_token") == token or not page.get("next_token")
        if read_all and (not follow_job or ended):
            if not stream:
                state = (
                    f"ended ({page['attempt_status']}) without running"
                    if attempt_over
                    else f"did not run before the job ended {page['status']}"
                    if ended
                    else f"has not run yet ({page['attempt_status']}; --follow waits for it)"
                )
                say(f"attempt {page['attempt']} of job {job_id} {state}: no log stream")
            elif follow_job and attempt_over and page["status"] not in FINISHED:
                over = f"has ended ({page['attempt_status']}): nothing more to follow"
                say(f"attempt {page['attempt']} of job {job_id} {over}")
            return dict(page)
        token = page.get("next_token") or token
        if read_all:
            time.sleep(poll_seconds)


def _no_attempt_yet(body: Any) -> bool:
    """The logs route's 404 for a job that exists but has made no attempt yet (not one for an unknown job)."""
    return isinstance(body, dict) and body.get("error") == "AttemptNotFound"
