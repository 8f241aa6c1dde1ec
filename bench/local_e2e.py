"""Load: 200 jobs from 20 threads through the local cloud's HTTP API; each job's local overhead is the time from
its POST to its SUCCEEDED (in its timeline) minus its runtime.

Metrics: overhead_seconds_median (goal <= 2 s: baseline 2), overhead p95 against the median, jobs accepted and
finished of those sent, and pools per GPU type (goal 1: jobs share their pool). Then, on the same cloud with its
pools made, jobs sent one at a time (each POSTed when the one before has finished): the local cloud's own latency
with nothing queued ahead of a job (overhead_seconds_median_one_at_a_time, against the same goal), which tells the
control plane's latency from the time a job spends queued for the one interpreter that runs the whole local cloud.
"""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import environment, metric, utc_now

NAME = "local_e2e"
JOBS = 200
THREADS = 20
RUNTIME_SECONDS = 1.0
TYPES = ("g4dn.xlarge", "g5.xlarge", "g6.xlarge", "g6e.xlarge")
GOAL_OVERHEAD_SECONDS = 2.0
TIMEOUT_SECONDS = 900
ONE_AT_A_TIME = 8


def _parse(at: str) -> float:
    return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()


def _overhead(job: dict[str, Any], posted: float) -> float | None:
    succeeded = [e["at"] for e in job.get("timeline") or [] if e.get("status") == "SUCCEEDED"]
    if job["status"] != "SUCCEEDED" or not succeeded:
        return None
    return _parse(succeeded[0]) - posted - RUNTIME_SECONDS


def _one_at_a_time(api_url: str, jobs: int) -> list[float]:
    """Overheads of `jobs` jobs sent one after another, each once the one before has finished."""
    from tests.e2e.faults.drive import FINISHED, IMAGE, http

    overheads: list[float] = []
    for index in range(jobs):
        body = {"name": f"alone-{index}", "image": IMAGE, "command": ["nvidia-smi", "-L"],
                "instance_types": [TYPES[index % len(TYPES)]]}  # fmt: skip
        sent = time.time()
        status, answer = http("POST", f"{api_url}/jobs", body)
        if status != 202:
            continue
        deadline = time.monotonic() + 120
        job = answer
        while job.get("status") not in FINISHED and time.monotonic() < deadline:
            time.sleep(0.1)
            job = http("GET", f"{api_url}/jobs/{answer['job_id']}")[1]
        overhead = _overhead(job, sent)
        if overhead is not None:
            overheads.append(overhead)
    return overheads


def run() -> dict[str, Any]:
    import boto3

    from gpupilot.localcloud.server import LocalCloud
    from gpupilot.localcloud.world import World
    from tests.e2e.faults.drive import FINISHED, IMAGE, http, list_all

    world = World.model_validate({"jobs": {"runtime_seconds": RUNTIME_SECONDS}})
    posted: dict[str, float] = {}
    lock = threading.Lock()
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        cloud = LocalCloud(world, port=0, sweep_seconds=0, log_file=Path(tmp) / "bench.log").start()
        try:

            def submit(index: int) -> None:
                body = {"name": f"load-{index}", "image": IMAGE, "command": ["nvidia-smi", "-L"],
                        "instance_types": [TYPES[index % len(TYPES)]]}  # fmt: skip
                sent = time.time()
                status, answer = http("POST", f"{cloud.api_url}/jobs", body)
                if status == 202:
                    with lock:
                        posted[answer["job_id"]] = sent

            started = time.perf_counter()
            with ThreadPoolExecutor(THREADS) as pool:
                list(pool.map(submit, range(JOBS)))
            submit_wall = time.perf_counter() - started
            deadline = time.monotonic() + TIMEOUT_SECONDS
            jobs: dict[str, dict[str, Any]] = {}
            while time.monotonic() < deadline:
                jobs = {j["job_id"]: j for j in list_all(cloud.api_url) if j["job_id"] in posted}
                if len(jobs) == len(posted) and all(j["status"] in FINISHED for j in jobs.values()):
                    break
                time.sleep(2)
            total_wall = time.perf_counter() - started
            batch = boto3.client(
                "batch", endpoint_url=cloud.aws_url, region_name="us-east-1",
                aws_access_key_id="testing", aws_secret_access_key="testing",
            )  # fmt: skip
            pools = [e["computeEnvironmentName"] for e in batch.describe_compute_environments()["computeEnvironments"]]
            alone = sorted(_one_at_a_time(cloud.api_url, ONE_AT_A_TIME))
        finally:
            cloud.stop()
    overheads = []
    for job_id, job in jobs.items():
        overhead = _overhead(job, posted[job_id])
        if overhead is not None:
            overheads.append(overhead)
    overheads.sort()
    median = statistics.median(overheads) if overheads else float("nan")
    p95 = overheads[int(0.95 * (len(overheads) - 1))] if overheads else float("nan")
    per_type = Counter(next((t for t in TYPES if t.replace(".", "-") in name), "other") for name in pools)
    return {
        "benchmark": NAME,
        "measured_at": utc_now(),
        "method": f"{JOBS} jobs ({RUNTIME_SECONDS:g} s runtime, cycling over {', '.join(TYPES)}) POSTed from "
        f"{THREADS} threads to one in-process local cloud; overhead = SUCCEEDED time in the job's timeline - "
        "POST time - runtime; baseline of the median: the goal (2 s). Then, on the same cloud (pools made), "
        f"{ONE_AT_A_TIME} jobs sent one at a time, each when the one before had finished: "
        "overhead_seconds_median_one_at_a_time, against the same goal",
        "environment": environment(),
        "metrics": {
            "overhead_seconds_median": metric(median, "s", GOAL_OVERHEAD_SECONDS),
            "overhead_seconds_p95_vs_median": metric(p95, "s", median if median > 0 else 1),
            "jobs_accepted": metric(len(posted), "jobs", JOBS),
            "jobs_succeeded": metric(len(overheads), "jobs", JOBS),
            "pools_per_gpu_type": metric(max(per_type.values(), default=0), "pools", 1),
            "overhead_seconds_median_one_at_a_time": metric(
                statistics.median(alone) if alone else float("nan"), "s", GOAL_OVERHEAD_SECONDS
            ),
            "jobs_succeeded_one_at_a_time": metric(len(alone), "jobs", ONE_AT_A_TIME),
        },
        "details": {
            "statuses": dict(Counter(j["status"] for j in jobs.values())),
            "submit_wall_seconds": round(submit_wall, 1),
            "total_wall_seconds": round(total_wall, 1),
            "pools": sorted(pools),
            "overhead_seconds_min_max": [round(overheads[0], 2), round(overheads[-1], 2)] if overheads else [],
            "overhead_seconds_one_at_a_time": [round(value, 2) for value in alone],
        },
    }
