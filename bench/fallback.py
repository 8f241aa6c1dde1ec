"""Fallback: seconds from the moment the local Batch says a job cannot start (its insufficient-capacity verdict) to
the job's next attempt, as the job's timeline shows them to a user, on the workflow as it is against the workflow
that waits for its start wait to time out (stuck_after) before it diagnoses, in the same run.

Metrics: verdict_to_next_attempt_seconds (the largest of the jobs': the verdict, the RUNNABLE entry's `reason_at`,
to the next attempt's PROVISIONING entry), verdict_to_next_batch_job_seconds (to the next attempt's RUNNABLE entry:
its Batch job submitted), each against the old path; and the first against the goal, 10 s. The same for jobs second
in their queue: each waits behind a job that may run on the first choice alone, so Batch says its verdict of that
job, which heads the queue, and not of them; their wait counts from when they became RUNNABLE behind it.

    python -m bench.fallback                                       # the result JSON
    python -m bench.fallback --scenario [--jobs N] [--stuck-after-minutes M] [--wait-for-timeout] [--behind]
                             --output FILE
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import REPO_ROOT, at_least, at_most, emit, environment, metric, utc_now

NAME = "fallback"
JOBS = 3
GOAL_SECONDS = 10.0
# The old path waits its whole start wait: 15 minutes by default, a minute here so that the run stays short.
OLD_PATH_STUCK_AFTER_MINUTES = 1.0
TIMEOUT_SECONDS = 300
FIRST = "g4dn.xlarge"
WORLD = {"instance_types": {FIRST: {"capacity": "none"}}, "jobs": {"runtime_seconds": 1}}
# Each job tries the first choice again on purpose: the first fallback left it in the memory of unavailable offerings.
JOB = {"name": "fallback", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"],
       "ignore_unavailable": True}  # fmt: skip
# How the first start wait ended (first_start_wait_ended_by).
VERDICT, TIMEOUT, STARTED = "verdict", "timeout", "started"
SUMMARY = (
    "Seconds from the moment Batch says a job cannot start (the local Batch's CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY "
    "verdict) to the job's next attempt, as its timeline shows them, against the old path that waited for the start "
    "wait to time out before diagnosing (goal: at most 10 s on the local cloud)."
)


def wait_for_timeouts() -> None:
    """The old path (the bench's deliberately worse variant): Batch's verdict never resumes the start wait, so the
    workflow diagnoses only when the wait times out after stuck_after."""
    from functions.shared.usecases.jobs import track

    track.pending_verdict = lambda attempt, wait: None


def moments(job: dict[str, Any], behind: bool = False) -> dict[str, float | None]:
    """Seconds from the first attempt's verdict (`behind`: from when it became RUNNABLE behind the job Batch said its
    verdict of) to the next attempt's PROVISIONING and RUNNABLE entries (None: the job has no such entry)."""
    from functions.shared.domain.core.clock import seconds_between

    entries = job["timeline"]
    runnable = next((i for i, e in enumerate(entries) if e["status"] == "RUNNABLE"), None)
    if runnable is None:
        return {"next_attempt": None, "next_batch_job": None}
    verdict = entries[runnable]["at"] if behind else entries[runnable]["reason_at"] or entries[runnable]["at"]
    following = entries[runnable + 1 :]
    provisioning = next((e for e in following if e["status"] == "PROVISIONING"), None)
    submitted = next((e for e in following if e["status"] == "RUNNABLE"), None)
    return {
        "next_attempt": seconds_between(verdict, provisioning["at"]) if provisioning else None,
        "next_batch_job": seconds_between(verdict, submitted["at"]) if submitted else None,
    }


def first_start_wait_ended_by(history: list[dict[str, Any]]) -> str | None:
    """How the workflow's first WaitForJobToStart ended, from its execution history: VERDICT (resumed with Batch's
    verdict), TIMEOUT (its stuck_after ran out), STARTED (resumed by the job's start), or None (still waiting)."""
    waiting = False
    for event in history:
        if event.get("stateEnteredEventDetails", {}).get("name") == "WaitForJobToStart":
            waiting = True
        elif waiting and event["type"] == "TaskTimedOut":
            return TIMEOUT
        elif waiting and event["type"] == "TaskSucceeded":
            output = json.loads(event["taskSucceededEventDetails"]["output"])
            return VERDICT if output.get("verdict") else STARTED
    return None


def execution_history(aws_url: str, execution_arn: str) -> list[dict[str, Any]]:
    import boto3

    sfn = boto3.client("stepfunctions", endpoint_url=aws_url, region_name="us-east-1")
    kwargs: dict[str, Any] = {"executionArn": execution_arn, "maxResults": 1000}
    events: list[dict[str, Any]] = []
    while True:
        page = sfn.get_execution_history(**kwargs)
        events += page["events"]
        if not page.get("nextToken"):
            return events
        kwargs["nextToken"] = page["nextToken"]


def scenario(
    jobs: int = JOBS,
    stuck_after_minutes: float | None = None,
    fast: bool = True,
    timeout: float = TIMEOUT_SECONDS,
    behind: bool = False,
) -> dict[str, Any]:
    """`jobs` jobs whose first choice Batch has no capacity for, one after another, through a local cloud (`behind`:
    each queued behind a job that may run on it alone, which heads the queue): each job's moments, how its first start
    wait ended, its status and attempts (a job still waiting after `timeout` seconds is reported as it stands)."""
    from gpupilot.cli.client import ApiClient
    from gpupilot.localcloud.server import LocalCloud
    from gpupilot.localcloud.world import World

    if not fast:
        wait_for_timeouts()
    body = JOB | ({"stuck_after_minutes": stuck_after_minutes} if stuck_after_minutes else {})
    measured: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        cloud = LocalCloud(World.model_validate(WORLD), port=0, log_file=Path(tmp) / "bench.log").start()
        try:
            api = ApiClient(cloud.api_url)
            if behind:
                head(api, body, timeout)
            for number in range(jobs):
                job_id = api.request("POST", "/jobs", body | {"name": f"fallback-{number}"}).body["job_id"]
                deadline = time.monotonic() + timeout
                job = api.request("GET", f"/jobs/{job_id}").body
                while job["status"] not in ("SUCCEEDED", "FAILED", "CANCELLED") and time.monotonic() < deadline:
                    time.sleep(0.5)
                    job = api.request("GET", f"/jobs/{job_id}").body
                history = execution_history(cloud.aws_url, job["execution_arn"])
                measured.append(
                    moments(job, behind)
                    | {
                        "first_start_wait_ended_by": first_start_wait_ended_by(history),
                        "status": job["status"],
                        "attempts": len(job["attempts"]),
                    }
                )
        finally:
            cloud.stop()
    return {"jobs": measured, "stuck_after_minutes": body.get("stuck_after_minutes"), "fast": fast, "behind": behind}


def head(api: Any, body: dict[str, Any], timeout: float) -> None:
    """A job that may run on the first choice alone, at the head of its queue once Batch has said its verdict of it:
    it waits there for capacity (it has no other type to try) while the measured jobs queue behind it."""
    job_id = api.request("POST", "/jobs", body | {"name": "head", "instance_types": [FIRST]}).body["job_id"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = api.request("GET", f"/jobs/{job_id}").body
        said = [e for e in job["timeline"] if e["status"] == "RUNNABLE" and (e["reason"] or "").startswith("CAPACITY")]
        if said:
            return
        time.sleep(0.5)
    raise RuntimeError(f"Batch said no verdict of the head job in {timeout:g} s: {job}")


def in_own_process(
    jobs: int = JOBS,
    stuck_after_minutes: float | None = None,
    fast: bool = True,
    timeout: float = TIMEOUT_SECONDS,
    behind: bool = False,
) -> dict[str, Any]:
    """moto's state is global to a process: each scenario runs in a fresh interpreter."""
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        output = Path(tmp) / "scenario.json"
        command = [sys.executable, "-m", "bench.fallback", "--scenario", "--output", str(output), "--jobs", str(jobs),
                   "--timeout", f"{timeout:g}",
                   *(["--stuck-after-minutes", f"{stuck_after_minutes:g}"] if stuck_after_minutes else []),
                   *([] if fast else ["--wait-for-timeout"]), *(["--behind"] if behind else [])]  # fmt: skip
        subprocess.run(command, cwd=REPO_ROOT, check=True, timeout=timeout * jobs + 120, stdout=subprocess.DEVNULL)
        return dict(json.loads(output.read_text()))


def worst(found: dict[str, Any], moment: str) -> float:
    return max(job[moment] for job in found["jobs"])


def fell_back(found: dict[str, Any]) -> None:
    """Raise unless every job of the scenario fell back and succeeded (its moments are then measured)."""
    for job in found["jobs"]:
        if job["status"] != "SUCCEEDED" or job["attempts"] < 2 or job["next_batch_job"] is None:
            raise RuntimeError(f"a job did not fall back and succeed: {job}")


def run(jobs: int = JOBS) -> dict[str, Any]:
    fast = in_own_process(jobs)
    old = in_own_process(jobs, stuck_after_minutes=OLD_PATH_STUCK_AFTER_MINUTES, fast=False)
    fast_behind = in_own_process(jobs, behind=True)
    old_behind = in_own_process(jobs, stuck_after_minutes=OLD_PATH_STUCK_AFTER_MINUTES, fast=False, behind=True)
    for found in (fast, old, fast_behind, old_behind):
        fell_back(found)
    return {
        "benchmark": NAME,
        "measured_at": utc_now(),
        "summary": SUMMARY,
        "notes": "Batch's verdict reaches GPU Pilot as an event (a queue-blocked event for the job at the head of its "
        "queue; the sweep sees one the events did not bring in ListJobs' statusReason), which resumes the start wait "
        "at once: the diagnosis, the fallback and the next pool's check follow within seconds, where the old path "
        f"waited out stuck_after ({OLD_PATH_STUCK_AFTER_MINUTES:g} min in this run; 15 by default, so about 900 s "
        "deployed). The next attempt's Batch job comes later by the time a new pool takes to be VALID (a local "
        "compute environment is CREATING for 0.5 s, polled every second; minutes on AWS). Batch event times are "
        "whole seconds, so the verdict's moment may read up to a second early.",
        "method": f"{jobs} jobs, one after another, through the local cloud (world: {WORLD}): each job's first "
        f"choice, {FIRST}, has no capacity, so the local Batch gives its CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY "
        "reason; from each job's timeline, the seconds from that verdict (the first RUNNABLE entry's reason_at) to "
        "the next attempt's PROVISIONING entry and to its RUNNABLE entry (its Batch job submitted), the largest of "
        "the jobs; stuck_after_minutes left at its default (15). From each job's execution history, how its first "
        "start wait ended (details: first_start_wait_ended_by, 'verdict' when Batch's verdict resumed it, 'timeout' "
        "when its stuck_after ran out). Baseline: the same jobs on the old path (the verdict does not resume the "
        f"start wait) with stuck_after_minutes {OLD_PATH_STUCK_AFTER_MINUTES:g}, same run. Second in the queue "
        "(second_in_queue_*): the same, each job queued behind a job that may run on the first choice alone, submitted "
        "first and left waiting at the head of the queue once Batch said its verdict of it (AWS says it of the head "
        "alone); each measured job's wait counts from its RUNNABLE entry (when it began waiting behind the head) to "
        "its next attempt's PROVISIONING entry.",
        "environment": environment(),
        "metrics": {
            "verdict_to_next_attempt_seconds": metric(worst(fast, "next_attempt"), "s", worst(old, "next_attempt"), 1),
            "verdict_to_next_batch_job_seconds": metric(
                worst(fast, "next_batch_job"), "s", worst(old, "next_batch_job"), 1
            ),
            "verdict_to_next_attempt_vs_goal": metric(
                worst(fast, "next_attempt"), "s", GOAL_SECONDS, 1, goal=at_most(GOAL_SECONDS)
            ),
            # Moved on by Batch's verdict, not by its start wait's timeout: every job, read from its history.
            "jobs_moved_on_by_verdict": metric(
                sum(job["first_start_wait_ended_by"] == VERDICT for job in fast["jobs"]),
                "jobs",
                jobs,
                goal=at_least(jobs),
            ),
            "second_in_queue_to_next_attempt_seconds": metric(
                worst(fast_behind, "next_attempt"), "s", worst(old_behind, "next_attempt"), 1
            ),
            "second_in_queue_to_next_attempt_vs_goal": metric(
                worst(fast_behind, "next_attempt"), "s", GOAL_SECONDS, 1, goal=at_most(GOAL_SECONDS)
            ),
            "second_in_queue_jobs_moved_on_by_verdict": metric(
                sum(job["first_start_wait_ended_by"] == VERDICT for job in fast_behind["jobs"]),
                "jobs",
                jobs,
                goal=at_least(jobs),
            ),
        },
        "details": {
            "fast": fast,
            "old_path": old,
            "second_in_queue": fast_behind,
            "second_in_queue_old_path": old_behind,
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", action="store_true", help="run one scenario here: its JSON")
    parser.add_argument("--jobs", type=int, default=JOBS)
    parser.add_argument("--stuck-after-minutes", type=float, help="the jobs' stuck_after_minutes (default: the API's)")
    parser.add_argument(
        "--wait-for-timeout",
        action="store_true",
        help="the old path: Batch's verdict does not resume the start wait (the bench's own test)",
    )
    parser.add_argument("--timeout", type=float, default=TIMEOUT_SECONDS, help="seconds each job has to end")
    parser.add_argument("--behind", action="store_true", help="each job queued behind a job Batch said its verdict of")
    parser.add_argument("--output", type=Path)
    args = parser.parse_args(argv)
    if args.scenario:
        found = scenario(args.jobs, args.stuck_after_minutes, not args.wait_for_timeout, args.timeout, args.behind)
    else:
        found = run(args.jobs)
    emit(found, args.output)


if __name__ == "__main__":
    main()
