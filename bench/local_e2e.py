"""Load: jobs through the local cloud's HTTP API as clients see them. A job's overhead is the moment a client
polling GET /jobs/{id} first sees it in a terminal status with its cost, minus the moment it was POSTed, minus its
runtime: all the control plane adds, from the submit to the answer the user waits for.

Two phases on one local cloud whose pools a first job per GPU type has made: jobs sent one at a time (each POSTed
once the one before was seen finished, its client polling every POLL_SECONDS as `gpupilot submit --wait` does),
then JOBS at once from THREADS client threads (each thread follows its share of the jobs, polling each every
CONCURRENT_POLL_SECONDS). Each phase also gives the local cloud's CPU seconds per job (the process's CPU time less
the client threads' own): the local cloud runs every handler, moto's Step Functions interpreter and moto's server
in one Python process, whose threads share one interpreter lock, so that CPU, not the control plane's design,
bounds the concurrent figure.

    python -m bench.local_e2e [--jobs 200] [--alone 8] [--hold-terminal-events SECONDS] [--output FILE]
"""

from __future__ import annotations

import argparse
import math
import statistics
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import at_least, at_most, emit, environment, metric, utc_now

NAME = "local_e2e"
JOBS = 200
THREADS = 20
ALONE = 8
RUNTIME_SECONDS = 1.0
TYPES = ("g4dn.xlarge", "g5.xlarge", "g6.xlarge", "g6e.xlarge")
GOAL_OVERHEAD_SECONDS = 2.0
POLL_SECONDS = 0.5  # gpupilot submit --wait's interval: one job, one user waiting on it
# 200 users each polling every 0.5 s would ask 400 times a second: more than the jobs' own work, on one interpreter.
# A client following many jobs checks each less often.
CONCURRENT_POLL_SECONDS = 2.0
TIMEOUT_SECONDS = 900
ALONE_TIMEOUT_SECONDS = 120
TERMINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}
# A phase whose wall time is at most this many times the local cloud's CPU seconds is bound by that CPU.
CPU_BOUND_RATIO = 1.5
SUMMARY = (
    "What a user of the local cloud waits for beyond the job's own runtime, from POST /jobs to the moment their "
    "client, polling GET /jobs/{id}, first sees the job finished with its cost. Goal: a median of at most 2 s. "
    "Jobs sent one at a time show the control plane's own latency; 200 at once show what one interpreter on 2 "
    "cores can serve, with the local cloud's CPU seconds per job saying why."
)
NOTES = (
    "Sampled under the 200-job load (2026-11-23), half the local cloud's CPU was moto's generic response "
    "serializer re-encoding DynamoDB items already in their JSON wire format, a tenth its ANTLR parse of the state "
    "machine at every execution, another tenth a new boto3 client for every Step Functions task: "
    "the speed-ups in gpupilot/localcloud/moto_adaptations/ remove all three with answers unchanged (tested "
    "against moto alone). What "
    "is left is mostly moto's DynamoDB UpdateItem (expression parsing and validation, deep copies), the HTTP round "
    "trip of every call to the embedded server, the handlers' own work, and the answers to the clients' polls. "
    "Until 2026-11-24 the overhead stopped at the timeline's SUCCEEDED entry, which is Batch's stoppedAt "
    "(startedAt + runtime in the simulator): everything after the job's start was left out."
)


def notes(metrics: dict[str, Any], jobs: int) -> str:
    """What this run's figures show, its sentences chosen by them and its figures left to the page (placeholders
    bench/render.py fills from the metrics), then NOTES."""
    alone = "overhead_seconds_median_one_at_a_time"
    found = [f"One at a time, the median overhead is {{{alone}}} s against the goal of {{{alone}.target}} s."]
    concurrent = f"overhead_seconds_median_{jobs}_concurrent"
    if concurrent in metrics:
        bound = f"wall_seconds_{jobs}_concurrent_vs_local_cloud_cpu_seconds"
        found.append(
            f"Sent {jobs} at once, it is {{{concurrent}}} s ({{{concurrent}.verdict}}): the local cloud spends "
            f"{{local_cloud_cpu_seconds_per_job_{jobs}_concurrent}} CPU seconds a job, and the phase's wall time is "
            f"{{{bound}.ratio}}x that CPU time: "
            + (
                "one interpreter's core is what bounds it, so each job's control-plane work waits behind the others'."
                if metrics[bound]["ratio"] <= CPU_BOUND_RATIO
                else "more than its CPU, so the jobs also wait on something other than the interpreter."
            )
        )
    return " ".join([*found, NOTES])


@dataclass
class Followed:
    """A job a client submitted and follows: when it was POSTed, when the client first saw it finished."""

    index: int
    job_id: str | None = None
    posted: float = 0.0
    seen: float | None = None
    job: dict[str, Any] = field(default_factory=dict)
    next_poll: float = 0.0
    polls: int = 0

    def overhead(self) -> float | None:
        if self.seen is None or self.job.get("status") != "SUCCEEDED":
            return None
        return self.seen - self.posted - RUNTIME_SECONDS


def _body(name: str, index: int, types: tuple[str, ...]) -> dict[str, Any]:
    from tests.e2e.faults.drive import IMAGE

    return {
        "name": name,
        "image": IMAGE,
        "command": ["nvidia-smi", "-L"],
        "instance_types": [types[index % len(types)]],
    }


def finished_with_cost(job: dict[str, Any]) -> bool:
    """What a user waits for: a terminal status, and the cost that comes with it."""
    return job.get("status") in TERMINAL and job.get("cost") is not None


def _submit(api_url: str, followed: Followed, prefix: str, types: tuple[str, ...]) -> None:
    from tests.e2e.faults.drive import http

    followed.posted = time.monotonic()
    status, answer = http("POST", f"{api_url}/jobs", _body(f"{prefix}-{followed.index}", followed.index, types))
    if status == 202:
        followed.job_id = str(answer["job_id"])
    followed.next_poll = followed.posted


def _poll(api_url: str, followed: Followed, every: float) -> None:
    from tests.e2e.faults.drive import http

    status, job = http("GET", f"{api_url}/jobs/{followed.job_id}")
    now = time.monotonic()
    followed.polls += 1
    if status == 200:
        followed.job = job
        if finished_with_cost(job):
            followed.seen = now
    followed.next_poll = now + every


def follow(
    api_url: str,
    jobs: list[Followed],
    prefix: str,
    deadline: float,
    types: tuple[str, ...] = TYPES,
    every: float = POLL_SECONDS,
) -> float:
    """A client: submits its jobs one after another, polling every job it has submitted each `every` seconds, until
    it has seen each finished (or the deadline passes). The CPU seconds this client thread spent."""
    began = time.thread_time()
    unsent = list(jobs)
    while time.monotonic() < deadline:
        if unsent:
            _submit(api_url, unsent.pop(0), prefix, types)
        waiting = [j for j in jobs if j.job_id is not None and j.seen is None]
        for followed in waiting:
            if followed.next_poll <= time.monotonic():
                _poll(api_url, followed, every)
        if not unsent and not [j for j in waiting if j.seen is None]:
            break
        if not unsent:
            due = min((j.next_poll for j in waiting if j.seen is None), default=time.monotonic())
            time.sleep(max(0.0, min(due - time.monotonic(), every)))
    return time.thread_time() - began


@dataclass
class Phase:
    """The jobs of one phase, its wall time, and the local cloud's CPU seconds during it."""

    jobs: list[Followed]
    wall_seconds: float
    cloud_cpu_seconds: float

    def overheads(self) -> list[float]:
        return sorted(o for j in self.jobs if (o := j.overhead()) is not None)

    def summary(self) -> dict[str, Any]:
        found = self.overheads()
        return {
            "sent": len(self.jobs),
            "accepted": sum(j.job_id is not None for j in self.jobs),
            "succeeded": len(found),
            "statuses": dict(Counter(j.job.get("status") for j in self.jobs)),
            "wall_seconds": round(self.wall_seconds, 1),
            "cloud_cpu_seconds": round(self.cloud_cpu_seconds, 1),
            "polls_per_job": round(sum(j.polls for j in self.jobs) / max(len(self.jobs), 1), 1),
            "overhead_seconds_min_median_max": _spread(found),
        }


def _spread(values: list[float]) -> list[float]:
    return [round(values[0], 2), round(statistics.median(values), 2), round(values[-1], 2)] if values else []


def _measured(clients: Callable[[], float]) -> tuple[float, float]:
    """Run `clients` (it returns the CPU seconds its client threads spent): wall seconds, and the process's CPU
    seconds less the clients' own, the local cloud's share."""
    wall, cpu = time.monotonic(), time.process_time()
    client_cpu = clients()
    return time.monotonic() - wall, time.process_time() - cpu - client_cpu


def one_at_a_time(api_url: str, count: int, types: tuple[str, ...], prefix: str = "alone") -> Phase:
    """`count` jobs, each sent once the one before was seen finished."""
    jobs = [Followed(index) for index in range(count)]

    def clients() -> float:
        deadline = time.monotonic() + ALONE_TIMEOUT_SECONDS
        return sum(follow(api_url, [job], prefix, deadline, types) for job in jobs)

    wall, cpu = _measured(clients)
    return Phase(jobs, wall, cpu)


def concurrent(api_url: str, count: int, types: tuple[str, ...], threads: int = THREADS) -> Phase:
    """`count` jobs from `threads` client threads, each following every `threads`-th job."""
    jobs = [Followed(index) for index in range(count)]
    deadline = time.monotonic() + TIMEOUT_SECONDS

    def clients() -> float:
        spent: list[float] = []
        lock = threading.Lock()

        def client(share: list[Followed]) -> None:
            cpu = follow(api_url, share, "load", deadline, types, CONCURRENT_POLL_SECONDS)
            with lock:
                spent.append(cpu)

        started = [threading.Thread(target=client, args=(jobs[i::threads],)) for i in range(min(threads, count))]
        for thread in started:
            thread.start()
        for thread in started:
            thread.join()
        return sum(spent)

    wall, cpu = _measured(clients)
    return Phase(jobs, wall, cpu)


def held_terminal_events(seconds: float) -> type[Any]:
    """A deliberately worse local cloud (the bench's own test): each job's last Batch event arrives `seconds` late."""
    from gpupilot.localcloud.server import LocalCloud

    class LateCloud(LocalCloud):
        def deliver_event(self, event: dict[str, Any]) -> None:
            if (event.get("detail") or {}).get("status") in TERMINAL:
                time.sleep(seconds)
            super().deliver_event(event)

    return LateCloud


def _since(now: Mapping[str, float], before: Mapping[str, float]) -> dict[str, float]:
    """Seconds asleep per handler since `before`, of the handlers that slept."""
    return {
        key: round(seconds - before.get(key, 0.0), 3) for key, seconds in now.items() if seconds > before.get(key, 0.0)
    }


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def run(
    jobs: int = JOBS, alone: int = ALONE, hold_terminal_events: float = 0.0, types: tuple[str, ...] = TYPES
) -> dict[str, Any]:
    import boto3

    from gpupilot.localcloud.server import LocalCloud
    from gpupilot.localcloud.world import World

    world = World.model_validate({"jobs": {"runtime_seconds": RUNTIME_SECONDS}})
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        cloud_type = held_terminal_events(hold_terminal_events) if hold_terminal_events else LocalCloud
        cloud = cloud_type(world, port=0, sweep_seconds=0, log_file=Path(tmp) / "bench.log").start()
        try:
            one_at_a_time(cloud.api_url, len(types), types, "pool")  # each GPU type's pool made: not measured
            before = dict(cloud.dispatcher.asleep_seconds)
            alone_phase = one_at_a_time(cloud.api_url, alone, types)
            alone_asleep = _since(cloud.dispatcher.asleep_seconds, before)
            before = dict(cloud.dispatcher.asleep_seconds)
            load_phase = concurrent(cloud.api_url, jobs, types) if jobs else None
            load_asleep = _since(cloud.dispatcher.asleep_seconds, before)
            batch = boto3.client(
                "batch", endpoint_url=cloud.aws_url, region_name="us-east-1",
                aws_access_key_id="testing", aws_secret_access_key="testing",
            )  # fmt: skip
            pools = [e["computeEnvironmentName"] for e in batch.describe_compute_environments()["computeEnvironments"]]
        finally:
            cloud.stop()
    cpus = environment()["cpus_usable"] or 1
    alone_overheads = alone_phase.overheads()
    metrics: dict[str, Any] = {
        "overhead_seconds_median_one_at_a_time": metric(
            _median(alone_overheads), "s", GOAL_OVERHEAD_SECONDS, goal=at_most(GOAL_OVERHEAD_SECONDS)
        ),
        "jobs_succeeded_one_at_a_time": metric(len(alone_overheads), "jobs", max(alone, 1), goal=at_least(alone)),
        "local_cloud_cpu_seconds_per_job_one_at_a_time": metric(
            alone_phase.cloud_cpu_seconds / max(alone, 1), "CPU s", 1.0
        ),
        "handler_seconds_asleep_one_at_a_time": metric(
            sum(alone_asleep.values()), "s", alone_phase.wall_seconds, goal=at_most(0)
        ),
    }
    if load_phase is not None:
        found = load_phase.overheads()
        median = _median(found)
        p95 = found[math.ceil(0.95 * len(found)) - 1] if found else float("nan")
        per_job = load_phase.cloud_cpu_seconds / jobs
        metrics |= {
            f"overhead_seconds_median_{jobs}_concurrent": metric(
                median, "s", GOAL_OVERHEAD_SECONDS, goal=at_most(GOAL_OVERHEAD_SECONDS)
            ),
            f"overhead_seconds_p95_vs_median_{jobs}_concurrent": metric(p95, "s", median if median > 0 else 1),
            f"jobs_accepted_{jobs}_concurrent": metric(
                sum(j.job_id is not None for j in load_phase.jobs), "jobs", jobs
            ),
            f"jobs_succeeded_{jobs}_concurrent": metric(len(found), "jobs", jobs, goal=at_least(jobs)),
            f"local_cloud_cpu_seconds_per_job_{jobs}_concurrent": metric(
                per_job, "CPU s", alone_phase.cloud_cpu_seconds / max(alone, 1)
            ),
            # One process: its threads share one interpreter lock, so its CPU time is its bound on any number of cores.
            f"wall_seconds_{jobs}_concurrent_vs_local_cloud_cpu_seconds": metric(
                load_phase.wall_seconds, "s", load_phase.cloud_cpu_seconds, digits=1
            ),
            f"handler_seconds_asleep_{jobs}_concurrent": metric(
                sum(load_asleep.values()), "s", load_phase.wall_seconds, goal=at_most(0)
            ),
        }
    per_type = Counter(next((t for t in types if t.replace(".", "-") in name), "other") for name in pools)
    metrics["pools_per_gpu_type"] = metric(max(per_type.values(), default=0), "pools", 1)
    return {
        "benchmark": NAME,
        "measured_at": utc_now(),
        "summary": SUMMARY,
        "notes": notes(metrics, jobs),
        "method": (
            f"One in-process local cloud (default world, jobs of {RUNTIME_SECONDS:g} s runtime cycling over "
            f"{', '.join(types)}, sweep timer off), one job per type first to make the pools (not measured). Then "
            f"{alone} jobs one at a time, each POSTed once its client saw the one before finished, the client polling "
            f"its job with GET /jobs/{{id}} every {POLL_SECONDS:g} s (gpupilot submit --wait's interval); then {jobs} "
            f"jobs from {THREADS} client threads, each thread submitting its share one after another and polling every "
            f"job it has submitted each {CONCURRENT_POLL_SECONDS:g} s (details give the polls per job). Overhead = the "
            "monotonic time the client first received the job in a terminal status with its cost, minus the time just "
            "before its POST, minus the runtime: it includes up to one poll interval of detection. Baseline of the "
            "medians: the goal (2 s). Local cloud CPU = the process's CPU time (time.process_time, every thread) "
            "during the phase, less the CPU time (time.thread_time) of the client threads, divided by the phase's "
            "jobs: the handlers, moto, the fleet simulator and the answers to the clients' polls (baselines: 1 CPU "
            "second one at a time, the one-at-a-time figure for the concurrent phase). The local cloud is one Python "
            "process whose threads share one interpreter lock: wall_seconds_..._vs_local_cloud_cpu_seconds compares "
            "the concurrent phase's wall time with that CPU time (ratio near 1: one core's worth of CPU is what bounds "
            f"it, whatever the machine's {cpus} cores). Handler seconds asleep = the seconds the handlers' "
            "invocations spent in time.sleep during the phase (the local cloud counts them per handler: details), "
            "against the phase's wall time: a sleep on the path every job takes is latency whatever the machine."
            + (f" Terminal Batch events held back {hold_terminal_events:g} s." if hold_terminal_events else "")
        ),
        "environment": environment(),
        "metrics": metrics,
        "details": {
            "one_at_a_time": alone_phase.summary()
            | {"overheads": [round(o, 2) for o in alone_overheads], "asleep_seconds_by_handler": alone_asleep},
            "concurrent": load_phase.summary() | {"asleep_seconds_by_handler": load_asleep} if load_phase else None,
            "pools": sorted(pools),
            "poll_seconds": POLL_SECONDS,
            "hold_terminal_events_seconds": hold_terminal_events,
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=JOBS, help="jobs sent at once (0: none)")
    parser.add_argument("--alone", type=int, default=ALONE, help="jobs sent one at a time")
    parser.add_argument(
        "--hold-terminal-events",
        type=float,
        default=0.0,
        help="a deliberately worse local cloud: deliver each job's last Batch event this late",
    )
    parser.add_argument("--types", nargs="+", default=list(TYPES), help="the GPU types the jobs cycle over")
    parser.add_argument("--output", type=Path, help="write the JSON here instead of stdout")
    args = parser.parse_args(argv)
    emit(run(args.jobs, args.alone, args.hold_terminal_events, tuple(args.types)), args.output)


if __name__ == "__main__":
    main()
