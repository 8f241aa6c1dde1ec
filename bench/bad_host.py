"""Bad host: jobs through the local cloud on a pool of four GPU hosts, one of them bad (its GPU not visible to
containers), against the same jobs on the same world in the same run with a worse GPU Pilot: no quarantine at all
(the jobs hit), and no sweep started by the evidence, the scheduled sweep only (the seconds to the drain).

Metrics: attempts_on_bad_hosts (jobs the bad host failed before it was out of service) and
seconds_second_failure_to_drain (from the end of the second job the host failed to ECS taking the drain); the jobs
that failed in each run are in its details (every one retried elsewhere: none).

    python -m bench.bad_host                                                   # the result JSON
    python -m bench.bad_host --scenario [--no-quarantine | --no-trigger] [--jobs N] [--hold-seconds S] --output FILE

`--hold-seconds S` (a scenario's, for a test that counts, whatever the machine's load): each job the bad host fails
holds it S seconds of the local cloud's clock instead of 10, and the jobs run HELD_RUNTIME_SECONDS of it; the clock is
moved past the hold once, at the host's first failure (jobs are still queued then: each host takes one, the bad host's
second failure), and a third failure cannot come before a sweep has had S seconds to drain the host; once one has,
the clock is moved a job's length each time the jobs running are new ones, until they have all ended.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.parse
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import REPO_ROOT, at_most, emit, environment, metric, utc_now
from bench.local_api import get_json, post_json

NAME = "bad_host"
JOBS = 40
RUNTIME_SECONDS = 4
HELD_RUNTIME_SECONDS = 300
# The scheduled sweep of the runs without a sweep started by the evidence (deployed: every 5 minutes).
SWEEP_SECONDS = 20.0
TIMEOUT_SECONDS = 300
WORLD: dict[str, Any] = {
    "instance_types": {"g4dn.xlarge": {"bad_hosts": {"share": 0.25, "symptom": "no_gpu_visible", "seed": 1}}},
    "quotas": {"L-DB2E81BA": 16},  # four g4dn.xlarge at once
    "jobs": {"runtime_seconds": RUNTIME_SECONDS},
}
FAILED_START = "Task failed to start"
# The goal: a bad host is out of service after its second failure (the bad-hosts issue), so it fails two jobs.
QUARANTINED_AFTER = 2
QUARANTINE_SETTING = "GPUPILOT_QUARANTINE_BAD_HOSTS"
SUMMARY = (
    "One GPU host in four whose GPU containers cannot see: how many jobs it fails before it is out of service, and "
    "how long from its second failure until ECS stops placing jobs on it (the sweep the evidence starts), against no "
    "quarantine and against the scheduled sweep alone."
)
NOTES = (
    "A bad host fails a job every few seconds (the local cloud holds it 10 s per failed job: ECS stopping the task, "
    "Batch placing the next); without quarantine it keeps failing jobs until they run out, each costing one of "
    "Batch's three attempts. The sweep the second failure starts drains it in seconds: the Batch event's way to "
    "job_events (the local cloud delivers events one at a time, so a burst of forty jobs' events queues), then one "
    "sweep. The scheduled sweep alone waits for its next tick, half an interval on average (20 s here, 5 minutes "
    "deployed), while the host fails whatever Batch places on it."
)


def without_quarantine(cloud: Any) -> None:
    """A deliberately worse GPU Pilot (the bench's own test): no host is ever quarantined (the setting, as an
    operator would change it with UpdateFunctionConfiguration)."""
    for key in ("job_events", "health_sweep"):
        function = cloud.dispatcher.functions[key]
        cloud.dispatcher.update_environment(function.name, {**function.environment, QUARANTINE_SETTING: "false"})


def without_trigger() -> None:
    """A worse GPU Pilot: the evidence starts no sweep; the scheduled sweep alone quarantines."""
    from functions.shared.usecases.hosts import evidence as host_evidence

    host_evidence.enough_to_quarantine = lambda faults: False


def _millis(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).astimezone(UTC).timestamp() * 1000


def _swept(api: str, timeout: float = 120) -> dict[str, Any]:
    """A sweep's report, started now (it reports every host quarantined in the window, whichever sweep did it)."""
    sweep_id = post_json(f"{api}/sweep", {})["sweep_id"]
    deadline = time.monotonic() + timeout
    report = get_json(f"{api}/health?sweep_id={sweep_id}")
    while report["status"] == "RUNNING" and time.monotonic() < deadline:
        time.sleep(0.5)
        report = get_json(f"{api}/health?sweep_id={sweep_id}")
    return dict(report)


def _listed(api: str, ids: list[str]) -> dict[str, dict[str, Any]]:
    """The scenario's jobs as GET /jobs lists them, a page of a hundred at a time (one request where a GET per job asked
    forty a second: the local cloud's CPU answering the bench's polls is CPU its jobs then wait for)."""
    jobs: dict[str, dict[str, Any]] = {}
    token = ""
    while True:
        page = get_json(f"{api}/jobs?limit=100" + (f"&next_token={urllib.parse.quote(token)}" if token else ""))
        jobs |= {job["job_id"]: job for job in page["jobs"] if job["job_id"] in ids}
        token = page.get("next_token") or ""
        if not token:
            return jobs


def _failed_starts(api: str, batch: Any, ids: list[str]) -> int:
    """How many of the jobs' Batch attempts so far failed to start."""
    batch_ids = [a["batch_job_id"] for job in _listed(api, ids).values() for a in job["attempts"] if a["batch_job_id"]]
    described = [j for start in range(0, len(batch_ids), 100)
                 for j in batch.describe_jobs(jobs=batch_ids[start : start + 100])["jobs"]]  # fmt: skip
    return sum(a.get("statusReason") == FAILED_START for job in described for a in job["attempts"])


def measure(api: str, aws: str, jobs: int, timeout: float, hold_seconds: float | None = None) -> dict[str, Any]:
    """Run `jobs` jobs, then read from Batch which attempts ran on bad hosts, and from /health when each was drained.
    With `hold_seconds`, the local cloud's clock is moved as the module's docstring says."""
    import boto3

    body = {"name": "bench", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["python3", "train.py"],
            "instance_types": ["g4dn.xlarge"], "stuck_after_minutes": 1440}  # fmt: skip
    batch = boto3.client("batch", endpoint_url=aws, region_name="us-east-1", aws_access_key_id="local",
                         aws_secret_access_key="local")  # fmt: skip
    ids = [post_json(f"{api}/jobs", body)["job_id"] for _ in range(jobs)]
    deadline = time.monotonic() + timeout
    if hold_seconds is not None:
        while not _failed_starts(api, batch, ids) and time.monotonic() < deadline:
            time.sleep(0.5)
        post_json(f"{api}/local/clock", {"advance_seconds": hold_seconds})
        while not any(f["kind"] == "BAD_GPU_HOST" for f in get_json(f"{api}/health")["findings"]):
            if time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finished: dict[str, dict[str, Any]] = {}
    moved_past: set[str] = set()
    while len(finished) < len(ids) and time.monotonic() < deadline:
        running = set()
        for job_id, job in _listed(api, ids).items():
            if job["status"] in ("SUCCEEDED", "FAILED"):
                finished[job_id] = job
            elif job["status"] == "RUNNING":
                running.add(job_id)
        if hold_seconds is not None and running and not running & moved_past:
            post_json(f"{api}/local/clock", {"advance_seconds": HELD_RUNTIME_SECONDS})
            moved_past |= running
        time.sleep(1)
    batch_ids = [a["batch_job_id"] for job in finished.values() for a in job["attempts"] if a["batch_job_id"]]
    by_host: dict[str, list[dict[str, Any]]] = {}
    for start in range(0, len(batch_ids), 100):
        for described in batch.describe_jobs(jobs=batch_ids[start : start + 100])["jobs"]:
            for attempt in described["attempts"]:
                by_host.setdefault(attempt["container"]["containerInstanceArn"], []).append(attempt)
    bad = {arn: tried for arn, tried in by_host.items() if any(a.get("statusReason") == FAILED_START for a in tried)}
    drained = {
        f["evidence"]["container_instance"]: f["evidence"].get("drained_at")
        for f in _swept(api)["findings"]
        if f["kind"] == "BAD_GPU_HOST"
    }
    to_drain = []
    for arn, tried in bad.items():
        failures = sorted(a["stoppedAt"] for a in tried if a.get("statusReason") == FAILED_START)
        if len(failures) >= 2 and drained.get(arn):
            to_drain.append((_millis(drained[arn]) - failures[1]) / 1000)
    return {
        "jobs": len(ids),
        "finished": len(finished),
        "failed": sum(1 for job in finished.values() if job["status"] == "FAILED"),
        "bad_hosts": len(bad),
        "attempts_on_bad_hosts": sum(len(tried) for tried in bad.values()),
        "seconds_second_failure_to_drain": to_drain,
    }


def scenario(
    jobs: int = JOBS,
    quarantine: bool = True,
    trigger: bool = True,
    timeout: float = TIMEOUT_SECONDS,
    hold_seconds: float | None = None,
) -> dict[str, Any]:
    from gpupilot.localcloud.server import LocalCloud
    from gpupilot.localcloud.world import World

    if not trigger:
        without_trigger()
    world = json.loads(json.dumps(WORLD))
    if hold_seconds is not None:
        world["instance_types"]["g4dn.xlarge"]["bad_hosts"]["hold_seconds"] = hold_seconds
        world["jobs"]["runtime_seconds"] = HELD_RUNTIME_SECONDS
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        cloud = LocalCloud(World.model_validate(world), port=0, sweep_seconds=SWEEP_SECONDS,
                           log_file=Path(tmp) / "bench.log").start()  # fmt: skip
        if not quarantine:
            without_quarantine(cloud)
        try:
            return measure(cloud.api_url, cloud.aws_url, jobs, timeout, hold_seconds)
        finally:
            cloud.stop()


def in_own_process(
    jobs: int = JOBS,
    quarantine: bool = True,
    trigger: bool = True,
    timeout: float = TIMEOUT_SECONDS,
    hold_seconds: float | None = None,
) -> dict[str, Any]:
    """moto's state is global to a process: each scenario runs in a fresh interpreter; `timeout` bounds the wait for
    its jobs (those still unfinished then are left out of the counts, and `finished` says how many ended)."""
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        output = Path(tmp) / "scenario.json"
        command = [sys.executable, "-m", "bench.bad_host", "--scenario", "--output", str(output), "--jobs", str(jobs),
                   *([] if quarantine else ["--no-quarantine"]), *([] if trigger else ["--no-trigger"]),
                   "--timeout", str(timeout),
                   *([] if hold_seconds is None else ["--hold-seconds", str(hold_seconds)])]  # fmt: skip
        subprocess.run(command, cwd=REPO_ROOT, check=True, timeout=timeout + 180, stdout=subprocess.DEVNULL)
        return dict(json.loads(output.read_text()))


def run(jobs: int = JOBS) -> dict[str, Any]:
    quarantined = in_own_process(jobs)
    unquarantined = in_own_process(jobs, quarantine=False)
    scheduled = in_own_process(jobs, trigger=False)
    seconds = quarantined["seconds_second_failure_to_drain"]
    scheduled_seconds = scheduled["seconds_second_failure_to_drain"]
    if not seconds or not scheduled_seconds:
        # A figure never stands in for one not measured (a run whose host was not drained, or not seen so).
        raise RuntimeError(f"no drain measured: {quarantined} / {scheduled}")
    return {
        "benchmark": NAME,
        "measured_at": utc_now(),
        "summary": SUMMARY,
        "notes": NOTES,
        "method": f"{jobs} jobs ({RUNTIME_SECONDS} s each) submitted at once to g4dn.xlarge through the local cloud, "
        f"whose world {WORLD} gives a pool of four hosts of which one (seed 1) fails every container start with the "
        "NVIDIA runtime's NVML error; Batch's attempts read back from the local cloud's Batch (DescribeJobs: which "
        "container instance ran each, which failed to start), the drain's time from GET /health (BAD_GPU_HOST "
        f"evidence drained_at). Baselines, same world, same run: no quarantine ({QUARANTINE_SETTING}=false), "
        f"and no sweep started by the evidence (the scheduled sweep, every {SWEEP_SECONDS:g} s here, alone)",
        "environment": environment(),
        "metrics": {
            "attempts_on_bad_hosts": metric(
                quarantined["attempts_on_bad_hosts"],
                "attempts",
                max(unquarantined["attempts_on_bad_hosts"], 1),
                goal=at_most(QUARANTINED_AFTER),
            ),
            "seconds_second_failure_to_drain": metric(max(seconds), "s", max(max(scheduled_seconds), 0.001), digits=1),
        },
        "details": {"quarantine": quarantined, "no_quarantine": unquarantined, "scheduled_sweep_only": scheduled},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", action="store_true", help="run one scenario here: its JSON")
    parser.add_argument("--jobs", type=int, default=JOBS)
    parser.add_argument("--no-quarantine", action="store_true", help="a worse GPU Pilot that quarantines no host")
    parser.add_argument("--no-trigger", action="store_true", help="a worse GPU Pilot: the scheduled sweep alone")
    parser.add_argument("--output", type=Path)
    parser.add_argument("--timeout", type=float, default=TIMEOUT_SECONDS, help="seconds to wait for the jobs")
    parser.add_argument(
        "--hold-seconds", type=float, help="a scenario's bad-host hold; the clock is moved past it at the first failure"
    )
    args = parser.parse_args(argv)
    found = (
        scenario(args.jobs, not args.no_quarantine, not args.no_trigger, args.timeout, args.hold_seconds)
        if args.scenario
        else run(args.jobs)
    )
    emit(found, args.output)


if __name__ == "__main__":
    main()
