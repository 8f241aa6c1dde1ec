"""Control-plane cost per job: Step Functions state transitions and Lambda invocations, 1 minute vs 10 hours.

The design says the workflow never polls Batch, so what a job costs the control plane must not grow
with its runtime. One job runs through the local cloud (embedded moto, the real ASL, the handlers
in-process, the Batch simulator) with a simulated runtime of 60 s and one with 36000 s; `speedup` makes
each take about 1.5 s of wall time while Batch's startedAt/stoppedAt keep the simulated duration.

moto's state is global to a process, so each scenario runs in its own interpreter:

    python -m bench.control_plane --runtime-seconds 60 [--output FILE]   # one scenario, JSON
    python -m bench.control_plane                                          # both, the result JSON
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from bench import REPO_ROOT, environment, metric, utc_now

NAME = "control_plane"
SHORT_RUNTIME = 60
LONG_RUNTIME = 36000
TARGET_WALL_SECONDS = 1.5
API_HANDLER = "functions.api.handler.handler"
JOB_BODY = {"name": "bench", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"]}
FINISHED = {"SUCCEEDED", "FAILED", "CANCELLED"}
POLL_SECONDS = 0.1
SCENARIO_TIMEOUT_SECONDS = 120


def _http(method: str, url: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, json.loads(response.read())


def execution_history(sfn: Any, execution_arn: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"executionArn": execution_arn, "maxResults": 1000}
    while True:
        page = sfn.get_execution_history(**kwargs)
        events.extend(page["events"])
        if not page.get("nextToken"):
            return events
        kwargs["nextToken"] = page["nextToken"]


def scenario(runtime_seconds: float, speedup: float | None = None) -> dict[str, Any]:
    """Run one job of simulated `runtime_seconds` in a fresh local cloud; what it cost the control plane."""
    import boto3

    from gpupilot.localcloud.server import LocalCloud
    from gpupilot.localcloud.world import JobsWorld, World

    speedup = speedup or runtime_seconds / TARGET_WALL_SECONDS
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        cloud = LocalCloud(
            World(jobs=JobsWorld(runtime_seconds=runtime_seconds)),
            port=0,
            speedup=speedup,
            sweep_seconds=0,
            log_file=Path(tmp) / "bench.log",
        ).start()
        try:
            assert cloud.dispatcher is not None
            sfn = boto3.client(
                "stepfunctions",
                endpoint_url=cloud.aws_url,
                region_name="us-east-1",
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            )
            before = Counter(cloud.dispatcher.invocations)
            started = time.perf_counter()
            status, submitted = _http("POST", f"{cloud.api_url}/jobs", JOB_BODY)
            if status != 202:
                raise RuntimeError(f"POST /jobs answered {status}: {submitted}")
            job_id, execution_arn = submitted["job_id"], submitted["execution_arn"]
            deadline = started + SCENARIO_TIMEOUT_SECONDS
            polls = 0
            while True:
                _, job = _http("GET", f"{cloud.api_url}/jobs/{job_id}")
                polls += 1
                if job["status"] in FINISHED:
                    break
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"job {job_id} still {job['status']} after {SCENARIO_TIMEOUT_SECONDS}s")
                time.sleep(POLL_SECONDS)
            # The job record is final once RecordCost ran; the execution still passes its last states.
            while (execution := sfn.describe_execution(executionArn=execution_arn))["status"] == "RUNNING":
                if time.perf_counter() > deadline:
                    raise RuntimeError(f"execution of {job_id} still RUNNING after {SCENARIO_TIMEOUT_SECONDS}s")
                time.sleep(POLL_SECONDS)
            wall = time.perf_counter() - started
            time.sleep(0.2)  # let a Lambda invoked just before the end finish counting
            delta = Counter(cloud.dispatcher.invocations)
            delta.subtract(before)
            events = execution_history(sfn, execution_arn)
        finally:
            cloud.stop()
    entered = [e for e in events if e["type"].endswith("StateEntered")]
    states = Counter(e["stateEnteredEventDetails"]["name"] for e in entered)
    per_handler = {handler: count for handler, count in sorted(delta.items()) if count}
    control_plane = {h: c for h, c in per_handler.items() if h != API_HANDLER}
    return {
        "runtime_seconds": runtime_seconds,
        "speedup": speedup,
        "wall_seconds": round(wall, 3),
        "job_id": job_id,
        "job_status": job["status"],
        "execution_status": execution["status"],
        "instance_type": job.get("instance_type"),
        "state_transitions": len(entered),
        "history_events": len(events),
        "states_entered": dict(states),
        "lambda_invocations": sum(control_plane.values()),
        "lambda_invocations_by_handler": control_plane,
        "api_invocations_excluded": per_handler.get(API_HANDLER, 0),
        "api_polls": polls,
        "cost": job.get("cost"),
        "timeline": job.get("timeline"),
    }


def cost_check(result: dict[str, Any]) -> dict[str, Any]:
    """The recorded cost against hourly x simulated runtime / 3600 x GPU share."""
    cost = result.get("cost") or {}
    hourly = float(cost.get("hourly_usd") or 0)
    share = float(cost.get("gpu_share") or 0)
    expected = hourly * result["runtime_seconds"] / 3600 * share
    usd = float(cost.get("usd") or 0)
    return {
        "usd": usd,
        "hourly_usd": hourly,
        "runtime_seconds_recorded": cost.get("runtime_seconds"),
        "gpu_share": share,
        "expected_usd": round(expected, 10),
        "formula": f"hourly_usd x {result['runtime_seconds']:g} / 3600 x gpu_share",
        # The product may round usd (to a micro-dollar at most); a real mismatch is far larger.
        "matches": bool(cost) and abs(usd - expected) <= 1e-6,
    }


def run_scenario_process(runtime_seconds: float) -> dict[str, Any]:
    """`scenario` in its own interpreter (moto's backends are process-global)."""
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        output = Path(tmp) / "scenario.json"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "bench.control_plane",
                "--runtime-seconds",
                f"{runtime_seconds:g}",
                "--output",
                str(output),
            ],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=SCENARIO_TIMEOUT_SECONDS + 180,
            check=False,
        )
        if done.returncode != 0 or not output.exists():
            raise RuntimeError(f"control-plane scenario ({runtime_seconds:g}s) failed: {done.stderr.strip()[-3000:]}")
        return dict(json.loads(output.read_text()))


def run() -> dict[str, Any]:
    started = time.perf_counter()
    short = run_scenario_process(SHORT_RUNTIME)
    long = run_scenario_process(LONG_RUNTIME)
    for result in (short, long):
        if result["job_status"] != "SUCCEEDED" or result["execution_status"] != "SUCCEEDED":
            raise RuntimeError(
                f"the {result['runtime_seconds']:g}s job ended {result['job_status']} "
                f"(execution {result['execution_status']})"
            )
    t_short, t_long = short["state_transitions"], long["state_transitions"]
    metrics = {
        "transitions_per_job_1min": metric(t_short, "state transitions", t_short),
        "transitions_per_job_10h": metric(t_long, "state transitions", t_short),
        "transitions_ratio_10h_vs_1min": metric(t_long / t_short, "x", 1.0),
        "lambda_invocations_per_job": metric(long["lambda_invocations"], "invocations", short["lambda_invocations"]),
    }
    return {
        "benchmark": NAME,
        "measured_at": utc_now(),
        "method": (
            "One job (1 GPU, nvidia-smi -L, default world) runs through the local cloud: embedded moto executing "
            "the deployed ASL, the real handlers in-process, the Batch simulator emitting Batch's state-change "
            "events; sweep timer off. Simulated runtimes 60 s and 36000 s (10 h), each in its own interpreter "
            "and LocalCloud, with speedup = runtime / 1.5 so both take ~1.5 s of wall time (Batch's "
            "startedAt/stoppedAt keep the simulated runtime, so the cost is that of the full runtime). "
            "State transitions = the number of *StateEntered events in the execution's "
            "GetExecutionHistory (paginated). Lambda invocations = the delta of the local cloud's per-handler "
            "invocation counter from POST /jobs until the execution ended, excluding functions.api.handler "
            "(the client's submit and status polling are not control-plane cost). The 5-minute health sweep "
            "is a fixed cost per deployment, not per job, and is not counted. Baselines: the 1-minute job."
        ),
        "environment": environment(),
        "metrics": metrics,
        "details": {
            "runs": {"1min": short, "10h": long},
            "lambda_invocations_by_handler": {
                "1min": short["lambda_invocations_by_handler"],
                "10h": long["lambda_invocations_by_handler"],
            },
            "cost_check": {"1min": cost_check(short), "10h": cost_check(long)},
            "wall_seconds": round(time.perf_counter() - started, 1),
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runtime-seconds", type=float, help="run one scenario with this simulated runtime")
    parser.add_argument("--speedup", type=float, help=f"default: runtime / {TARGET_WALL_SECONDS}")
    parser.add_argument("--output", type=Path, help="write the JSON here instead of stdout")
    args = parser.parse_args(argv)
    result = scenario(args.runtime_seconds, args.speedup) if args.runtime_seconds is not None else run()
    text = json.dumps(result, indent=2)
    if args.output:
        args.output.write_text(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
