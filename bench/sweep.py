"""The health sweep at scale: 10,000 RUNNABLE jobs in 20 GPU Pilot queues, 200 instances, on moto.

What the issue asks: the sweep's AWS calls grow with pages and pools, not with jobs (goal: at most
ceil(jobs/100) + 5 x queues + 10), and its wall time stays close to the time it takes merely to list
those jobs (goal: at most 1.5x). Both are measured here in one process, against the same moto state:

- api_calls: every AWS call the sweep's adapters make (the clients' before-call hook counts them),
  baseline = the goal's budget, so a ratio <= 1 meets it.
- wall time: the median of RUNS sweeps, baseline = the median of RUNS listings of the same queues
  (ListJobs per queue for RUNNABLE, STARTING and RUNNING, 100 a page: the least any sweep must do).

The jobs were created an hour ago, so every one is past its stuck_after and is diagnosed (from its
pool's snapshot, read once per pool) and grouped into one finding per pool and cause. The 200 instances
are healthy (registered with their GPU), so no remediation acts and no quota is read.

    python -m bench.sweep [--jobs N] [--queues Q] [--instances I]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import statistics
import time
from datetime import datetime, timedelta
from typing import Any

from bench import environment, metric, utc_now

NAME = "sweep"
JOBS = 10_000
QUEUES = 20
INSTANCES = 200
RUNS = 3
ACCOUNT = "123456789012"
REGION = "us-east-1"
PREFIX = "gpupilot"


def _seed(deployed: Any, jobs: int, queues: int, instances: int) -> list[str]:
    """Pools (CE + queue), their healthy instances, and RUNNABLE jobs created an hour ago."""
    import boto3
    from moto.batch.models import batch_backends
    from moto.batch_simple.models import batch_simple_backends
    from moto.ecs.models import ecs_backends

    from functions.shared.domain.pools import POOL_TAG

    batch = boto3.client("batch", region_name=REGION)
    ec2 = boto3.client("ec2", region_name=REGION)
    environment_vars = deployed.functions["ensure_queue"].environment
    subnets = environment_vars["GPUPILOT_SUBNETS"].split(",")
    profile = environment_vars["GPUPILOT_INSTANCE_PROFILE_ARN"]
    definition = batch.register_job_definition(
        jobDefinitionName=f"{PREFIX}-bench",
        type="container",
        containerProperties={"image": "nvidia/cuda", "vcpus": 4, "memory": 8192},
    )["jobDefinitionArn"]
    backend = batch_backends[ACCOUNT][REGION]
    names = []
    for index in range(queues):
        name = f"{PREFIX}-od-x8664-bench{index:02d}"
        names.append(name)
        arn = batch.create_compute_environment(
            computeEnvironmentName=name,
            type="MANAGED",
            computeResources={
                "type": "EC2",
                "minvCpus": 0,
                "maxvCpus": 4096,
                "instanceTypes": ["g4dn.xlarge"],
                "subnets": subnets,
                "securityGroupIds": environment_vars["GPUPILOT_SECURITY_GROUPS"].split(","),
                "instanceRole": profile,
                "tags": {POOL_TAG: name},
            },
        )["computeEnvironmentArn"]
        batch.create_job_queue(
            jobQueueName=name,
            state="ENABLED",
            priority=1,
            computeEnvironmentOrder=[{"order": 1, "computeEnvironment": arn}],
        )
        cluster = backend.get_compute_environment(name).ecs_arn  # type: ignore[union-attr]
        per_pool = instances // queues
        launched = ec2.run_instances(
            ImageId="ami-12c6146b",
            MinCount=per_pool,
            MaxCount=per_pool,
            InstanceType="g4dn.xlarge",
            SubnetId=subnets[0],
            TagSpecifications=[{"ResourceType": "instance", "Tags": [{"Key": POOL_TAG, "Value": name}]}],
        )["Instances"]
        for instance in launched:
            registered = ecs_backends[ACCOUNT][REGION].register_container_instance(cluster, instance["InstanceId"])
            registered.registered_resources = [{"name": "GPU", "type": "STRINGSET", "stringSetValue": ["GPU-0"]}]
    an_hour_ago = datetime.now() - timedelta(hours=1)
    for index in range(jobs):
        _, job_id, _ = batch_simple_backends[ACCOUNT][REGION].submit_job(
            f"job-{index}", definition, names[index % queues], array_properties={}
        )
        job = backend._jobs[job_id]
        job.status = "RUNNABLE"
        job.job_created_at = an_hour_ago
    return names


def run(jobs: int = JOBS, queues: int = QUEUES, instances: int = INSTANCES) -> dict[str, Any]:
    import boto3
    from moto import mock_aws

    from functions.shared.adapters.clients import observe_calls, reset_clients, stop_observing
    from functions.shared.adapters.config import reset_settings
    from functions.shared.adapters.wiring import live_ports, reset_ports
    from functions.shared.usecases.sweep import run_sweep
    from functions.shared.usecases.sweep_jobs import list_live_jobs
    from gpupilot.localcloud.deploy import deploy
    from gpupilot.localcloud.moto_adaptations import ComputeEnvironmentLifecycle, adapted_moto
    from gpupilot.localcloud.server import MOTO_CONFIG
    from gpupilot.localcloud.template import load_template

    os.environ.update(AWS_DEFAULT_REGION=REGION, AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench")
    calls: list[str] = []

    def count(params: Any, model: Any, **_: Any) -> None:
        calls.append(model.name)

    # The sweep's per-pool metrics print as EMF lines (CloudWatch reads them from the log): not here.
    with (
        contextlib.redirect_stdout(io.StringIO()),
        mock_aws(config=MOTO_CONFIG),  # type: ignore[call-overload]
        adapted_moto(on_job_submitted=lambda job: None, lifecycle=ComputeEnvironmentLifecycle(0)),
    ):
        deployed = deploy(boto3.session.Session(), load_template(), [f"{REGION}a", f"{REGION}b"])
        names = _seed(deployed, jobs, queues, instances)
        os.environ.update(deployed.functions["health_sweep"].environment)
        reset_settings()
        reset_clients()
        reset_ports()
        # Observed from the start: clients take the session's event hooks when they are made.
        observe_calls(count)
        ports = live_ports()
        run_sweep(None, ports)  # warm: clients made, catalog read
        calls.clear()
        report = run_sweep(None, ports)
        stop_observing(count)
        counted = len(calls)
        by_operation: dict[str, int] = {}
        for name in calls[:counted]:
            by_operation[name] = by_operation.get(name, 0) + 1
        sweeps, listings = [], []
        if os.environ.get("BENCH_PROFILE"):
            import cProfile
            import pstats
            import sys

            profile = cProfile.Profile()
            profile.runcall(run_sweep, None, ports)
            pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(45)
        for _ in range(RUNS):
            began = time.perf_counter()
            list_live_jobs(names, ports)
            listings.append(time.perf_counter() - began)
            began = time.perf_counter()
            run_sweep(None, ports)
            sweeps.append(time.perf_counter() - began)
    budget = math.ceil(jobs / 100) + 5 * queues + 10
    sweep_seconds, listing_seconds = statistics.median(sweeps), statistics.median(listings)
    return {
        "benchmark": NAME,
        "measured_at": utc_now(),
        "method": __doc__.split("\n\n    python")[0].strip() if __doc__ else "",
        "environment": environment(),
        "metrics": {
            f"api_calls_{jobs}_jobs_{queues}_queues": metric(counted, "AWS calls", budget),
            "wall_ratio_vs_listing_floor": metric(sweep_seconds / listing_seconds, "x", 1.5),
            "sweep_seconds": metric(sweep_seconds, "s", listing_seconds),
        },
        "details": {
            "jobs": jobs,
            "queues": queues,
            "instances": instances,
            "calls_by_operation": dict(sorted(by_operation.items())),
            "findings": [
                {"kind": f.kind.value, "resource": f.resource, "jobs": f.evidence.get("jobs_stuck")}
                for f in report.findings
            ][:5],
            "sweep_seconds_runs": [round(s, 3) for s in sweeps],
            "listing_seconds_runs": [round(s, 3) for s in listings],
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=JOBS)
    parser.add_argument("--queues", type=int, default=QUEUES)
    parser.add_argument("--instances", type=int, default=INSTANCES)
    args = parser.parse_args()
    print(json.dumps(run(args.jobs, args.queues, args.instances), indent=2))


if __name__ == "__main__":
    main()
