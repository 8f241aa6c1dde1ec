"""Control-plane cost per job: Step Functions state transitions and Lambda invocations, 1 minute vs 10 hours.

The design says the workflow never polls Batch, so what a job costs the control plane must not grow
with its runtime. One job runs through the local cloud (embedded moto, the real ASL, the handlers
in-process, the Batch simulator) with a simulated runtime of 60 s and one with 36000 s, both at the same
`speedup`: simulated time runs that much faster for the job and for the workflow's own Wait states and
timeouts alike, so a workflow that polled Batch on a timer would poll as often per simulated hour as on AWS.
The same two jobs through a polling variant of the ASL (a Wait of 60 s, DescribeJobs, a Choice, in a loop)
show what the bench reports for such a workflow: it is the evidence that this bench can fail.

moto's state is global to a process, so the jobs run in an interpreter of their own:

    python -m bench.control_plane [--runtimes 60 36000] [--speedup 600] [--variants deployed polling]
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

from bench import REPO_ROOT, at_most, emit, environment, metric, utc_now

NAME = "control_plane"
SHORT_RUNTIME = 60
LONG_RUNTIME = 36000
# Simulated time 600x faster: the 10-hour job takes a minute of real time, and a workflow polling every 60 s
# would do so every 0.1 s, time enough for each poll's three states.
SPEEDUP = 600
DEPLOYED, POLLING = "deployed", "polling"
POLL_SECONDS = 60
API_HANDLER = "functions.api.handler.handler"
# 12 hours: a 10-hour job within its timeout, as a user would submit it (the finish wait is scaled too).
JOB_BODY = {
    "name": "bench",
    "image": "nvidia/cuda:12.4.1-base-ubuntu22.04",
    "command": ["nvidia-smi", "-L"],
    "timeout_minutes": 720,
}
FINISHED = {"SUCCEEDED", "FAILED", "CANCELLED"}
POLL_CLIENT_SECONDS = 0.1
# Beyond the job's real runtime: the local cloud's start, the job's start and the workflow's last states.
SCENARIO_SLACK_SECONDS = 120
SUMMARY = (
    "The design's promise: a job's control-plane cost (Step Functions state transitions, which Step Functions "
    "bills, and Lambda invocations) does not grow with its runtime. Goal: the 10-hour job costs what the "
    "1-minute job costs (ratio 1). The reference row runs the same jobs through an ASL that polls Batch every "
    "60 s instead of waiting for its events: what this bench shows for a workflow that breaks the promise."
)
NOTES = (
    "A job's control-plane work is fixed: SelectGpuType, EnsureJobQueue, SubmitBatchJob, the two waits (each a "
    "Lambda that parks its task token; Batch's state-change event, through job_events, resumes it), RecordCost. "
    "Waiting costs nothing, so the 10-hour job's transitions and invocations are the 1-minute job's. Step "
    "Functions Standard workflows are billed per state transition: the polling variant pays three per poll, "
    "600 polls over 10 hours on AWS (details.runs counts the local cloud's, fewer: each poll's own work adds real "
    "time that the speedup does not shorten)."
)


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


def polling_definition(definition: str, poll_seconds: int = POLL_SECONDS) -> str:
    """The deployed ASL made to poll: after the job starts, Wait `poll_seconds`, DescribeJobs, and loop until
    Batch says it ended; only then WaitForJobToFinish (whose event came long before: it resumes at once)."""
    asl = json.loads(definition)
    states = asl["States"]
    states["WaitForJobToStart"]["Next"] = "WaitBeforePolling"
    states["WaitBeforePolling"] = {"Type": "Wait", "Seconds": poll_seconds, "Next": "PollBatchJob"}
    # In boto3's casing: moto's aws-sdk integration does not translate (AWS takes and gives PascalCase,
    # "Jobs" and "$.Jobs[0].Status"); this variant only ever runs in the local cloud.
    states["PollBatchJob"] = {
        "Type": "Task",
        "Resource": "arn:aws:states:::aws-sdk:batch:describeJobs",
        "Parameters": {"jobs.$": "States.Array($.batch_job.batch_job_id)"},
        "ResultSelector": {"job.$": "$.jobs[0]"},
        "ResultPath": "$.polled",
        "Next": "IsBatchJobDone",
    }
    states["IsBatchJobDone"] = {
        "Type": "Choice",
        "Choices": [
            {
                "Or": [
                    {"Variable": "$.polled.job.status", "StringEquals": "SUCCEEDED"},
                    {"Variable": "$.polled.job.status", "StringEquals": "FAILED"},
                ],
                "Next": "WaitForJobToFinish",
            }
        ],
        "Default": "WaitBeforePolling",
    }
    return json.dumps(asl)


def _job(cloud: Any, sfn: Any, runtime_seconds: float) -> dict[str, Any]:
    """One job of simulated `runtime_seconds` through `cloud`, followed as a client would; what it cost the
    control plane."""
    assert cloud.dispatcher is not None
    # The fleet reads the world's runtime when it starts a job: this job runs this long.
    cloud.world.jobs.runtime_seconds = runtime_seconds
    cloud.dispatcher.join_background()
    before = Counter(cloud.dispatcher.invocations)
    started = time.perf_counter()
    status, submitted = _http("POST", f"{cloud.api_url}/jobs", JOB_BODY)
    if status != 202:
        raise RuntimeError(f"POST /jobs answered {status}: {submitted}")
    job_id, execution_arn = submitted["job_id"], submitted["execution_arn"]
    deadline = started + runtime_seconds / cloud.speedup + SCENARIO_SLACK_SECONDS
    polls = 0
    while True:
        _, job = _http("GET", f"{cloud.api_url}/jobs/{job_id}")
        polls += 1
        if job["status"] in FINISHED:
            break
        if time.perf_counter() > deadline:
            raise RuntimeError(f"job {job_id} still {job['status']} at the scenario's deadline")
        time.sleep(POLL_CLIENT_SECONDS)
    # The job record is final once RecordCost ran; the execution still passes its last states.
    while (execution := sfn.describe_execution(executionArn=execution_arn))["status"] == "RUNNING":
        if time.perf_counter() > deadline:
            raise RuntimeError(f"execution of {job_id} still RUNNING at the scenario's deadline")
        time.sleep(POLL_CLIENT_SECONDS)
    wall = time.perf_counter() - started
    cloud.dispatcher.join_background()  # a Lambda invoked just before the end: counted once it ran
    delta = Counter(cloud.dispatcher.invocations)
    delta.subtract(before)
    events = execution_history(sfn, execution_arn)
    entered = [e for e in events if e["type"].endswith("StateEntered")]
    per_handler = {handler: count for handler, count in sorted(delta.items()) if count}
    control_plane = {h: c for h, c in per_handler.items() if h != API_HANDLER}
    return {
        "runtime_seconds": runtime_seconds,
        "wall_seconds": round(wall, 3),
        "job_id": job_id,
        "job_status": job["status"],
        "execution_status": execution["status"],
        "instance_type": job.get("instance_type"),
        "state_transitions": len(entered),
        "history_events": len(events),
        "states_entered": dict(Counter(e["stateEnteredEventDetails"]["name"] for e in entered)),
        "lambda_invocations": sum(control_plane.values()),
        "lambda_invocations_by_handler": control_plane,
        "api_invocations_excluded": per_handler.get(API_HANDLER, 0),
        "api_polls": polls,
        "cost": job.get("cost"),
        "timeline": job.get("timeline"),
    }


def session(
    runtimes: tuple[float, ...], speedup: float = SPEEDUP, variants: tuple[str, ...] = (DEPLOYED,)
) -> dict[str, list[dict[str, Any]]]:
    """In one fresh local cloud: a first job makes the pool (not counted), then, for each ASL variant in turn,
    one job of each runtime. The variant -> its jobs."""
    import boto3

    from gpupilot.localcloud.server import LocalCloud
    from gpupilot.localcloud.world import JobsWorld, World

    found: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        cloud = LocalCloud(
            World(jobs=JobsWorld(runtime_seconds=min(runtimes))),
            port=0,
            speedup=speedup,
            sweep_seconds=0,
            log_file=Path(tmp) / "bench.log",
        ).start()
        try:
            assert cloud.deployment is not None
            sfn = boto3.client(
                "stepfunctions",
                endpoint_url=cloud.aws_url,
                region_name="us-east-1",
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            )
            machine = cloud.deployment.state_machine_arn
            deployed = sfn.describe_state_machine(stateMachineArn=machine)["definition"]
            _job(cloud, sfn, min(runtimes))  # the pool every later job finds
            for asl in variants:
                definition = polling_definition(deployed) if asl == POLLING else deployed
                sfn.update_state_machine(stateMachineArn=machine, definition=definition)
                found[asl] = [_job(cloud, sfn, runtime) | {"asl": asl} for runtime in runtimes]
        finally:
            cloud.stop()
    return found


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


def run_session_process(
    runtimes: tuple[float, ...], speedup: float = SPEEDUP, variants: tuple[str, ...] = (DEPLOYED,)
) -> dict[str, list[dict[str, Any]]]:
    """`session` in its own interpreter (moto's backends are process-global)."""
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        output = Path(tmp) / "session.json"
        command = [sys.executable, "-m", "bench.control_plane", "--session", "--speedup", f"{speedup:g}",
                   "--output", str(output), "--runtimes", *(f"{r:g}" for r in runtimes),
                   "--variants", *variants]  # fmt: skip
        real_seconds = sum(runtimes) * len(variants) / speedup
        done = subprocess.run(
            command,
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            timeout=real_seconds + SCENARIO_SLACK_SECONDS * (1 + len(runtimes) * len(variants)),
            check=False,
        )
        if done.returncode != 0 or not output.exists():
            raise RuntimeError(f"control-plane session failed: {done.stderr.strip()[-3000:]}")
        return dict(json.loads(output.read_text()))


def label(seconds: float) -> str:
    """60 -> '1min', 36000 -> '10h'."""
    if seconds % 3600 == 0:
        return f"{seconds / 3600:g}h"
    if seconds % 60 == 0:
        return f"{seconds / 60:g}min"
    return f"{seconds:g}s"


def run(
    short_runtime: float = SHORT_RUNTIME,
    long_runtime: float = LONG_RUNTIME,
    speedup: float = SPEEDUP,
    variants: tuple[str, ...] = (DEPLOYED, POLLING),
) -> dict[str, Any]:
    """The deployed ASL's cost per job, short against long; each further variant as a reference row."""
    started = time.perf_counter()
    short_name, long_name = label(short_runtime), label(long_runtime)
    runs = run_session_process((short_runtime, long_runtime), speedup, variants)
    metrics: dict[str, Any] = {}
    for asl, (short, long) in runs.items():
        for result in (short, long):
            if result["job_status"] != "SUCCEEDED" or result["execution_status"] != "SUCCEEDED":
                raise RuntimeError(
                    f"the {result['runtime_seconds']:g}s job ({asl} ASL) ended {result['job_status']} "
                    f"(execution {result['execution_status']})"
                )
        prefix = "" if asl == DEPLOYED else f"{asl}_asl_"
        t_short, t_long = short["state_transitions"], long["state_transitions"]
        if asl == DEPLOYED:
            metrics[f"transitions_per_job_{short_name}"] = metric(t_short, "state transitions", t_short)
            metrics[f"transitions_per_job_{long_name}"] = metric(
                t_long, "state transitions", t_short, goal=at_most(1, of="ratio")
            )
        # The promise holds for the deployed ASL; the other variants are reference rows, held to nothing.
        promise = at_most(1, of="ratio") if asl == DEPLOYED else None
        metrics[f"{prefix}transitions_ratio_{long_name}_vs_{short_name}"] = metric(
            t_long / t_short, "x", 1.0, goal=promise
        )
        metrics[f"{prefix}lambda_invocations_per_job_{long_name}"] = metric(
            long["lambda_invocations"], "invocations", short["lambda_invocations"], goal=promise
        )
    return {
        "benchmark": NAME,
        "measured_at": utc_now(),
        "summary": SUMMARY,
        "notes": NOTES,
        "method": (
            "Jobs (1 GPU, nvidia-smi -L, timeout_minutes 720, default world) run one after another through one "
            "local cloud: embedded moto executing the deployed ASL, the real handlers in-process, the Batch "
            "simulator emitting Batch's state-change events; sweep timer off. A first job makes the pool and is "
            f"not counted (a job that makes its pool adds one WaitForJobQueue round: 3 transitions, one "
            f"ensure_queue invocation); then one job of simulated runtime {short_runtime:g} s and one of "
            f"{long_runtime:g} s, both at speedup {speedup:g}: the job's runtime, the workflow's Wait states "
            "(Seconds, SecondsPath) and its task timeouts pass that much faster than real time (a timeout never "
            "below 10 real seconds, the local fleet's own pace), while Batch's startedAt/stoppedAt keep the "
            "simulated runtime, so the cost is that of the full runtime. State transitions = the *StateEntered "
            "events of the job's execution history (GetExecutionHistory, paginated). Lambda invocations = the "
            "delta of the local cloud's per-handler invocation counter from POST /jobs until the execution "
            "ended, excluding functions.api.handler (the client's submit and status polling are not control-plane "
            "cost). The 5-minute health sweep is a fixed cost per deployment, not per job, and is not counted. "
            "Baselines: the short job, same ASL. The 'polling_asl_' rows run the same two jobs, in the same "
            f"cloud, through the deployed ASL changed to poll (after WaitForJobToStart: Wait {POLL_SECONDS} s, "
            "DescribeJobs through the aws-sdk integration, a Choice, looping until Batch says the job ended): "
            "what the bench reports for a workflow that polls (details.runs gives its polls, PollBatchJob)."
        ),
        "environment": environment(),
        "metrics": metrics,
        "details": {
            "runs": {f"{asl}_{label(r['runtime_seconds'])}": r for asl, jobs in runs.items() for r in jobs},
            "cost_check": {
                f"{asl}_{label(r['runtime_seconds'])}": cost_check(r) for asl, jobs in runs.items() for r in jobs
            },
            "speedup": speedup,
            "wall_seconds": round(time.perf_counter() - started, 1),
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--session", action="store_true", help="run the jobs in this process: their JSON")
    parser.add_argument("--runtimes", type=float, nargs="+", default=[SHORT_RUNTIME, LONG_RUNTIME])
    parser.add_argument("--variants", nargs="+", choices=(DEPLOYED, POLLING), default=[DEPLOYED, POLLING])
    parser.add_argument("--speedup", type=float, default=SPEEDUP, help="simulated time this much faster")
    parser.add_argument("--output", type=Path, help="write the JSON here instead of stdout")
    args = parser.parse_args(argv)
    if args.session:
        result: dict[str, Any] = session(tuple(args.runtimes), args.speedup, tuple(args.variants))
    else:
        short, long = args.runtimes
        result = run(short, long, args.speedup, tuple(args.variants))
    emit(result, args.output)


if __name__ == "__main__":
    main()
