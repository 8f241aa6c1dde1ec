"""The scale one region's deployment holds: the AWS calls a job and a sweep make, by service and API, weighed against
AWS's default quotas for those APIs.

Per job: one plain job (1 GPU, nvidia-smi -L, the default world, a simulated minute) through the local cloud, from
POST /jobs to the end of its workflow, in a pool an earlier job made (that first job, which makes the pool, is
reported beside it). Counted: every AWS call the handlers make (a botocore hook on the clients GPU Pilot makes,
functions/shared/adapters/clients.py: one count per call, retries not counted), by IAM's name for it
("batch:SubmitJob"); the Lambda invocations by function (the local cloud's dispatcher, POST /jobs's own included,
no GET /jobs: the bench waits on the execution itself, as no user needs to); the workflow's state transitions (its
*StateEntered history events); the EventBridge invocations (Batch's state-change events that GPU Pilot's rule
matched and sent to job_events); and the job record's size, which prices its DynamoDB reads and writes.
Per sweep: a warm sweep of the sweep bench's world (10,000 RUNNABLE jobs in 20 queues, 200 instances, records
behind 80%: `python -m bench.sweep --counts`), by API, once every five minutes (the deployed schedule).

For each quota: the jobs per minute it holds = (its sustained rate - what the sweeps take of it) x 60 / what one
job takes of it. The first quota a deployment meets is the one that holds the fewest. docs/scaling.md is rendered
from the result (`python -m bench.scaling_page`).

    python -m bench.scaling [--plain-jobs N] [--job-only] [--output FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import REPO_ROOT, api_name, at_most, by_api, emit, environment, metric, utc_now
from bench.local_api import post_json

NAME = "scaling"
PLAIN_JOBS = 3
RUNTIME_SECONDS = 60
SPEEDUP = 60  # the simulated minute runs a real second
SCENARIO_SLACK_SECONDS = 180
POLL_SECONDS = 0.1  # how often the bench asks whether the execution ended
JOB_BODY = {"name": "scaling", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"]}
SWEEP_PERIOD_SECONDS = 300  # functions/shared/constants.SWEEP_RATE_MINUTES
# What a Lambda invocation holds of the account's concurrency: each handler makes a handful of AWS calls of tens of
# milliseconds, so a second bounds it from above (an assumption, not a measure: see the page's note).
LAMBDA_SECONDS_PER_INVOCATION = 1.0
# The indexes that hold a whole job record beside the table (gsi1 and active, ALL projections) and the one that holds
# an entry of it (active_v2): a record write is written up to four times.
RECORD_WRITE_COPIES = 4
KB, READ_UNIT_BYTES = 1024, 4096
PAGE_BYTES = 1024 * 1024  # a Query or Scan page reads at most 1 MB
SUMMARY = (
    "The scale one region's deployment holds: the AWS calls one job and one sweep make, by service and API, counted "
    "through the local cloud, against AWS's default quotas for those APIs; the sustained jobs per minute each quota "
    "holds, and the first one a deployment meets. Baseline of the rate: what Batch's SubmitJob quota alone would "
    "hold (50 per second)."
)


@dataclass(frozen=True)
class Quota:
    """One default quota: the figure it bounds (of a job's or a sweep's figures), its sustained rate, its source."""

    key: str
    service: str
    name: str
    per_second: float
    demand: Callable[[dict[str, Any]], float]
    source: str
    says: str


def _calls(*apis: str) -> Callable[[dict[str, Any]], float]:
    return lambda figures: float(sum(figures["calls"].get(api, 0) for api in apis))


def _service(prefix: str) -> Callable[[dict[str, Any]], float]:
    return lambda figures: float(sum(n for api, n in figures["calls"].items() if api.startswith(prefix + ":")))


def _figure(name: str, factor: float = 1.0) -> Callable[[dict[str, Any]], float]:
    return lambda figures: float(figures.get(name, 0)) * factor


BATCH_QUOTAS = "https://docs.aws.amazon.com/batch/latest/userguide/service_limits.html"
BATCH_TOO_MANY = "https://repost.aws/knowledge-center/aws-batch-requests-error"
SFN_QUOTAS = "https://docs.aws.amazon.com/step-functions/latest/dg/limits-overview.html"
LAMBDA_QUOTAS = "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html"
DYNAMODB_QUOTAS = "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html"
EVENTBRIDGE_QUOTAS = "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html"
EC2_THROTTLING = "https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html"
QUOTAS = (
    Quota("batch:SubmitJob", "AWS Batch", "SubmitJob, per account", 50, _calls("batch:SubmitJob"), BATCH_QUOTAS,
          "Maximum number of transactions per second (TPS) for each account for SubmitJob operations: 50 "
          "(a quota that can't be changed)"),
    Quota("batch:*", "AWS Batch", "every Batch API call together", 50, _service("batch"), BATCH_TOO_MANY,
          "The maximum number of transactions per second (TPS) for each account for AWS Batch API calls, including "
          "the SubmitJob operations, is 50. This is a fixed limit."),
    Quota("states:StartExecution", "AWS Step Functions", "StartExecution (Standard)", 300,
          _calls("states:StartExecution"), SFN_QUOTAS,
          "StartExecution, in US East (N. Virginia), US West (Oregon) and Europe (Ireland): bucket 1,300, refill 300 "
          "per second (other Regions: 800, 150)"),
    Quota("states:StateTransition", "AWS Step Functions", "state transitions (Standard)", 1500,
          _figure("state_transitions"), SFN_QUOTAS,
          "StateTransition, in US East (N. Virginia), US West (Oregon) and Europe (Ireland): bucket 5,000, refill "
          "1,500 per second (other Regions: 800, 500); new accounts start lower"),
    Quota("states:SendTaskSuccess", "AWS Step Functions", "SendTaskSuccess", 500, _calls("states:SendTaskSuccess"),
          SFN_QUOTAS, "SendTaskSuccess: bucket 3,000, refill 500 per second (other Regions: 1,500, 300)"),
    Quota("states:StopExecution", "AWS Step Functions", "StopExecution", 200, _calls("states:StopExecution"),
          SFN_QUOTAS, "StopExecution: bucket 1,000, refill 200 per second (other Regions: 500, 25)"),
    Quota("lambda:concurrency", "AWS Lambda", "concurrent executions", 1000,
          _figure("lambda_invocations", LAMBDA_SECONDS_PER_INVOCATION), LAMBDA_QUOTAS,
          "Concurrent executions: 1,000 (can be increased); asynchronous invocations from AWS services (EventBridge): "
          "unlimited requests accepted, their execution rate bounded by the concurrency available"),
    Quota("lambda:Invoke", "AWS Lambda", "synchronous invocation requests", 10_000, _figure("api_invocations"),
          LAMBDA_QUOTAS, "Invocation requests per Region: 10 x concurrent executions quota (synchronous, all sources)"),
    Quota("dynamodb:write", "Amazon DynamoDB", "write request units per table (on-demand)", 40_000,
          _figure("dynamodb_write_units"), DYNAMODB_QUOTAS,
          "Per table, on-demand: 40,000 read request units and 40,000 write request units (the table with its global "
          "secondary indexes)"),
    Quota("dynamodb:read", "Amazon DynamoDB", "read request units per table (on-demand)", 40_000,
          _figure("dynamodb_read_units"), DYNAMODB_QUOTAS,
          "Per table, on-demand: 40,000 read request units and 40,000 write request units"),
    Quota("events:invocations", "Amazon EventBridge", "rule invocations", 18_750, _figure("eventbridge_invocations"),
          EVENTBRIDGE_QUOTAS,
          "An invocation is an event matching a rule and being sent to the rule's targets: 18,750 per second in the "
          "Regions of its highest tier (750 in the lowest); events from AWS services are not limited"),
)  # fmt: skip
EC2_NON_MUTATING_PER_SECOND = 20
EC2_SAYS = "a non-mutating action (Describe*): a bucket of 100 tokens per API, refilled 20 per second"


def ec2_quotas(apis: set[str]) -> list[Quota]:
    """Each EC2 API the job or the sweep calls has a request-rate bucket of its own."""
    return [
        Quota(api, "Amazon EC2", f"{api.split(':')[1]} (request rate)", EC2_NON_MUTATING_PER_SECOND, _calls(api),
              EC2_THROTTLING, EC2_SAYS)
        for api in sorted(apis) if api.startswith("ec2:Describe")
    ]  # fmt: skip


# -- a job through the local cloud ------------------------------------------------------------------------------


def _one_job(cloud: Any, sfn: Any, calls: list[tuple[str, str]], lock: threading.Lock) -> dict[str, Any]:
    """A job from POST /jobs to the end of its execution; what it cost, counted."""
    from bench.control_plane import execution_history

    assert cloud.dispatcher is not None and cloud.deployment is not None
    cloud.dispatcher.join_background()
    before = Counter(cloud.dispatcher.invocations)
    with lock:
        calls.clear()
    submitted = post_json(f"{cloud.api_url}/jobs", JOB_BODY, timeout=60)
    execution_arn = submitted["execution_arn"]
    deadline = time.monotonic() + RUNTIME_SECONDS / SPEEDUP + SCENARIO_SLACK_SECONDS
    while (execution := sfn.describe_execution(executionArn=execution_arn))["status"] == "RUNNING":
        if time.monotonic() > deadline:
            raise RuntimeError(f"job {submitted['job_id']} still running at the scenario's deadline")
        time.sleep(POLL_SECONDS)
    cloud.dispatcher.join_background()  # an asynchronous invocation started before the end: counted once it ran
    with lock:
        counted = by_api([api for _, api in calls])
        by_function = {
            function: by_api([api for caller, api in calls if caller == function])
            for function in sorted({caller for caller, _ in calls})
        }
    delta = Counter(cloud.dispatcher.invocations)
    delta.subtract(before)
    keys = {function.handler: key for key, function in cloud.dispatcher.functions.items()}
    invocations = {keys.get(handler, handler): n for handler, n in sorted(delta.items()) if n}
    targets = {key for rule in cloud.deployment.event_rules if not rule.schedule for key in rule.targets}
    entered = [e for e in execution_history(sfn, execution_arn) if e["type"].endswith("StateEntered")]
    return {
        "job_id": submitted["job_id"],
        "execution_status": execution["status"],
        "calls": counted,
        "aws_calls": sum(counted.values()),
        "calls_by_function": by_function,
        "lambda_invocations_by_function": invocations,
        "lambda_invocations": sum(invocations.values()),
        "api_invocations": invocations.get("api", 0),
        "eventbridge_invocations": sum(n for key, n in invocations.items() if key in targets),
        "state_transitions": len(entered),
        "record_bytes": _record_bytes(cloud.deployment.table_name, submitted["job_id"]),
    }


def _record_bytes(table: str, job_id: str) -> int:
    """The job record's size as DynamoDB counts it (attribute names and values), once the job ended."""
    from moto.dynamodb.models import dynamodb_backends
    from moto.dynamodb.models.dynamo_type import DynamoType

    from gpupilot.localcloud.deploy import ACCOUNT_ID

    found = dynamodb_backends[ACCOUNT_ID]["us-east-1"].get_table(table)
    item = found.get_item(DynamoType({"S": f"JOB#{job_id}"}), DynamoType({"S": "JOB"}))
    return int(item.size()) if item is not None else 0


def job_session(plain_jobs: int = PLAIN_JOBS) -> dict[str, Any]:
    """In a fresh local cloud (sweep timer off): a first job that makes its pool, then `plain_jobs` in that pool."""
    import boto3

    from functions.shared.adapters.clients import observe_calls, stop_observing
    from gpupilot.localcloud.dispatch import current_function
    from gpupilot.localcloud.server import LocalCloud
    from gpupilot.localcloud.world import JobsWorld, World

    calls: list[tuple[str, str]] = []
    lock = threading.Lock()

    def count(params: Any, model: Any, **_: Any) -> None:
        with lock:
            calls.append((current_function.get() or "?", api_name(model)))

    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        world = World(jobs=JobsWorld(runtime_seconds=RUNTIME_SECONDS))
        cloud = LocalCloud(world, port=0, speedup=SPEEDUP, sweep_seconds=0, log_file=Path(tmp) / "bench.log").start()
        observe_calls(count)
        try:
            sfn = boto3.client("stepfunctions", endpoint_url=cloud.aws_url, region_name="us-east-1",
                               aws_access_key_id="testing", aws_secret_access_key="testing")  # fmt: skip
            first = _one_job(cloud, sfn, calls, lock)
            plain = [_one_job(cloud, sfn, calls, lock) for _ in range(plain_jobs)]
        finally:
            stop_observing(count)
            cloud.stop()
    return {"first_job_in_a_new_pool": first, "plain_jobs": plain}


def run_job_session_process(plain_jobs: int = PLAIN_JOBS) -> dict[str, Any]:
    """`job_session` in its own interpreter (the local cloud's moto is process-global)."""
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        output = Path(tmp) / "jobs.json"
        command = [sys.executable, "-m", "bench.scaling", "--job-only", "--plain-jobs", str(plain_jobs),
                   "--output", str(output)]  # fmt: skip
        done = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=900, check=False)
        if done.returncode != 0 or not output.exists():
            raise RuntimeError(f"job session failed: {done.stderr.strip()[-3000:]}")
        return dict(json.loads(output.read_text()))


def sweep_counts_process() -> dict[str, Any]:
    """A cold and a warm sweep of the sweep bench's world, counted, in its own interpreter."""
    with tempfile.TemporaryDirectory(prefix="gpupilot-bench-") as tmp:
        output = Path(tmp) / "sweep.json"
        command = [sys.executable, "-m", "bench.sweep", "--counts", "--rounds", "2", "--output", str(output)]
        subprocess.run(command, cwd=REPO_ROOT, check=True, timeout=1800, capture_output=True)
        return dict(json.loads(output.read_text()))


def fewest(jobs: list[dict[str, Any]]) -> dict[str, Any]:
    """The plain jobs' calls, API by API, at their fewest (with the rest of the first job's figures): which of a wait
    and its event comes first may cost one job a read more than another; a change of the product costs every job."""
    apis = sorted({api for job in jobs for api in job["calls"]})
    calls = {api: min(job["calls"].get(api, 0) for job in jobs) for api in apis}
    return jobs[0] | {"calls": {api: n for api, n in calls.items() if n}}


# -- what they weigh against the quotas -----------------------------------------------------------------------
def per_job(job: dict[str, Any]) -> dict[str, Any]:
    """A job's figures with its DynamoDB request units, at most: each write of a record up to RECORD_WRITE_COPIES
    times its size in KB (the table and the indexes that hold it), each strongly consistent GetItem its size in 4 KB,
    each Query a unit (the small partitions a job queries: the offerings remembered, the pools)."""
    calls = job["calls"]
    kilobytes = max(1, math.ceil(job["record_bytes"] / KB))
    writes = sum(calls.get(f"dynamodb:{api}", 0) for api in ("PutItem", "UpdateItem", "DeleteItem"))
    writes += 2 * calls.get("dynamodb:TransactWriteItems", 0)
    reads = calls.get("dynamodb:GetItem", 0) * max(1, math.ceil(job["record_bytes"] / READ_UNIT_BYTES))
    return job | {
        "dynamodb_write_units": writes * kilobytes * RECORD_WRITE_COPIES,
        "dynamodb_read_units": reads + calls.get("dynamodb:Query", 0),
    }


def per_sweep(calls: dict[str, int], record_bytes: int) -> dict[str, Any]:
    """A sweep's figures: one invocation (the schedule's rule invoking health_sweep), its calls, and its DynamoDB
    request units at most: a page of the index or of a ledger 1 MB read strongly consistent, each BatchGetItem 100
    records and each TransactWriteItems 100 record writes (transactional: twice), records the size of the job's."""
    kilobytes = max(1, math.ceil(record_bytes / KB))
    pages = calls.get("dynamodb:Scan", 0) + calls.get("dynamodb:Query", 0)
    batch_reads = calls.get("dynamodb:BatchGetItem", 0) * 100 * max(1, math.ceil(record_bytes / READ_UNIT_BYTES))
    writes = calls.get("dynamodb:TransactWriteItems", 0) * 100 * 2
    return {
        "calls": calls,
        "aws_calls": sum(calls.values()),
        "lambda_invocations": 1,
        "eventbridge_invocations": 1,
        "dynamodb_read_units": pages * PAGE_BYTES // READ_UNIT_BYTES + batch_reads,
        "dynamodb_write_units": writes * kilobytes * RECORD_WRITE_COPIES,
    }


def sustained(job: dict[str, Any], sweep: dict[str, Any], period: float = SWEEP_PERIOD_SECONDS) -> list[dict[str, Any]]:
    """Each quota's jobs per minute: (its rate - the sweeps' share of it) x 60 / a job's share; fewest first."""
    rows = []
    for quota in (*QUOTAS, *ec2_quotas(set(job["calls"]) | set(sweep["calls"]))):
        per_job_demand, sweep_demand = quota.demand(job), quota.demand(sweep) / period
        left = quota.per_second - sweep_demand
        rows.append(
            {
                "quota": quota.key,
                "service": quota.service,
                "name": quota.name,
                "per_second": quota.per_second,
                "per_job": round(per_job_demand, 3),
                "sweeps_per_second": round(sweep_demand, 3),
                "jobs_per_minute": round(left * 60 / per_job_demand, 1) if per_job_demand else None,
                "source": quota.source,
                "says": quota.says,
            }
        )
    return sorted(rows, key=lambda row: (row["jobs_per_minute"] is None, row["jobs_per_minute"] or 0.0))


def run(plain_jobs: int = PLAIN_JOBS) -> dict[str, Any]:
    started = time.perf_counter()
    session = run_job_session_process(plain_jobs)
    jobs = session["plain_jobs"]
    if any(job["execution_status"] != "SUCCEEDED" for job in [session["first_job_in_a_new_pool"], *jobs]):
        raise RuntimeError(f"a job did not succeed: {[job['execution_status'] for job in jobs]}")
    job = fewest(jobs)
    job = per_job(job | {"aws_calls": sum(job["calls"].values())})
    swept = sweep_counts_process()
    sweep = per_sweep(swept["calls_by_api_per_round"][-1], job["record_bytes"]) | {
        "jobs": swept["jobs"],
        "queues": swept["queues"],
        "budget": swept["budget"],
        "period_seconds": SWEEP_PERIOD_SECONDS,
    }
    rows = sustained(job, sweep)
    first = rows[0]
    submit_only = next(row for row in rows if row["quota"] == "batch:SubmitJob")
    return {
        "benchmark": NAME,
        "measured_at": utc_now(),
        "summary": SUMMARY,
        "method": __doc__.split("\n\n    python")[0].strip() if __doc__ else "",
        "notes": notes(job, sweep, rows),
        "environment": environment(),
        "metrics": {
            "sustained_jobs_per_minute": metric(first["jobs_per_minute"], "jobs/min", submit_only["per_second"] * 60),
            "aws_calls_per_job": metric(job["aws_calls"], "AWS calls", session["first_job_in_a_new_pool"]["aws_calls"]),
            "aws_calls_per_warm_sweep": metric(
                sweep["aws_calls"], "AWS calls", swept["budget"], goal=at_most(swept["budget"])
            ),
            "lambda_invocations_per_job": metric(
                job["lambda_invocations"], "invocations", session["first_job_in_a_new_pool"]["lambda_invocations"]
            ),
            "state_transitions_per_job": metric(
                job["state_transitions"], "state transitions", session["first_job_in_a_new_pool"]["state_transitions"]
            ),
        },
        "details": {
            "first_quota": first["quota"],
            "quotas": rows,
            "job": job,
            "plain_jobs_identical": all(j["calls"] == jobs[0]["calls"] for j in jobs),
            "first_job_in_a_new_pool": session["first_job_in_a_new_pool"],
            "sweep": sweep,
            "assumptions": {
                "lambda_seconds_per_invocation": LAMBDA_SECONDS_PER_INVOCATION,
                "record_write_copies": RECORD_WRITE_COPIES,
            },
            "wall_seconds": round(time.perf_counter() - started, 1),
        },
    }


def notes(job: dict[str, Any], sweep: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """What the figures say, from the figures."""
    first, second = rows[0], rows[1]
    alone = next(row for row in rows if row["quota"] != "batch:*")
    batch = {api: n for api, n in job["calls"].items() if api.startswith("batch:")}
    makers = {
        function: ", ".join(
            f"{api.split(':')[1]} {n}" for api, n in calls.items() if api in batch or api.startswith("ec2:")
        )
        for function, calls in job["calls_by_function"].items()
    }
    return (
        f"A plain job makes {job['aws_calls']} AWS calls, {job['lambda_invocations']} Lambda invocations and "
        f"{job['state_transitions']} state transitions; a warm sweep of {sweep['jobs']:,} jobs makes "
        f"{sweep['aws_calls']} calls every {SWEEP_PERIOD_SECONDS // 60} minutes (its budget, {sweep['budget']} calls: "
        "{aws_calls_per_warm_sweep.verdict}). The first quota reached is "
        f"{first['service']}: {first['name']}, at {first['jobs_per_minute']:,.0f} jobs a minute; the next, "
        f"{second['service']}: {second['name']}, at {second['jobs_per_minute']:,.0f}. A job makes "
        f"{sum(batch.values())} Batch calls, and EC2 reads, by function ("
        + "; ".join(f"{function}: {words}" for function, words in makers.items() if words)
        + "). AWS's knowledge-center article holds every Batch call of an account to 50 a second together, its "
        f"quotas page names SubmitJob's 50 alone: read the second way, the first quota reached is {alone['service']}: "
        f"{alone['name']}, at {alone['jobs_per_minute']:,.0f} jobs a minute. Either way the first quotas reached are "
        "calls a job makes to look at or register what the job before it had already found (its pool, its launch "
        "template, its job definition): fewer of them is the way to more jobs a minute. Lambda's row assumes each "
        f"invocation holds its concurrency for {LAMBDA_SECONDS_PER_INVOCATION:g} s (details.assumptions); "
        "DynamoDB's rows bound the request units from above."
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--plain-jobs", type=int, default=PLAIN_JOBS)
    parser.add_argument("--job-only", action="store_true", help="the jobs' figures alone, in this process")
    parser.add_argument("--output", type=Path, help="write the JSON here instead of stdout")
    args = parser.parse_args(argv)
    emit(job_session(args.plain_jobs) if args.job_only else run(args.plain_jobs), args.output)


if __name__ == "__main__":
    main()
