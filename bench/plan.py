"""Planning a GPU job: the AWS calls a plan makes, cold and warm, and how long POST /plan takes.

In one process, on moto adapted as the local cloud adapts it (offerings, quotas, spot market and Price
List served in their AWS shapes), with the deployed template's api function environment:

- aws_calls_cold: every AWS call of the first plan of a fresh process (clients made, nothing cached),
  baseline = its budget (COLD_READS: what a new container reads once, and the offerings' memory), so a ratio
  <= 1 meets it.
- aws_calls_warm: the calls of a later plan in the same process, baseline = the goal (3), so a ratio
  <= 1 meets it. Both for a default (on-demand) request; spot requests add the spot market's calls,
  reported in the details.
- plan_ms_p50 / plan_ms_p95: POST /plan through the api handler (a proxy event, as API Gateway sends it),
  RUNS times, baseline = the same percentile of GET /jobs?limit=1 through the same handler in the same
  run (the API's own floor: routing, validation, one DynamoDB query).

    python -m bench.plan [--runs 40] [--no-cache] [--output FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import time
from typing import Any

from bench import api_name, at_most, by_api, emit, environment, metric, utc_now

NAME = "plan"
RUNS = 40
WARM_GOAL = 3
# What the first plan of a new container reads (docs/how-it-works.md): a cold plan makes at most these calls.
COLD_READS = {
    "ec2:DescribeInstanceTypes": 1,  # the catalog, kept an hour
    "ec2:DescribeSubnets": 1,  # the deployment's zones, once per process
    "ec2:DescribeInstanceTypeOfferings": 1,  # kept 10 minutes
    "servicequotas:GetServiceQuota": 2,  # the on-demand G/VT and P vCPU quotas, kept 10 minutes
    "ec2:DescribeCapacityReservations": 1,  # the account's reservations, kept a minute
    "dynamodb:Query": 1,  # the offerings remembered as unavailable: read by every plan, fresh
    "dynamodb:GetItem": 1,  # the Price List through the table's cache (a day; in the process an hour)
    "pricing:GetProducts": 1,
    "dynamodb:PutItem": 1,
}
COLD_BUDGET = sum(COLD_READS.values())
REGION = "us-east-1"
BODY = {"name": "bench", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"]}
SUMMARY = (
    "What planning a job costs: the AWS calls of a cold and of a warm plan (goal for a warm plan: at most 3), and "
    "POST /plan's latency through the api handler against GET /jobs?limit=1 through the same handler."
)
NOTES = (
    f"A cold plan makes at most {COLD_BUDGET} calls: DescribeInstanceTypes (the catalog, cached an hour), "
    "DescribeSubnets (once per process), DescribeInstanceTypeOfferings (cached 10 minutes), two GetServiceQuota "
    "(cached 10 minutes), DescribeCapacityReservations (cached a minute), the unavailable offerings' Query, and "
    "GetItem, GetProducts and PutItem for the Price List (cached in the table a day, in the process an hour). A "
    "warm plan reads only the memory of unavailable offerings, which must be fresh. A "
    "spot-first plan adds DescribeSpotPriceHistory, GetSpotPlacementScores (one call for the types the job would "
    "try) and DescribeAvailabilityZones, each cached (details). Caching offerings (2026-11-23) took a warm plan "
    "from 2 calls to 1 and its p50 from 8.9x to 1.9x the floor: moto answering DescribeInstanceTypeOfferings over "
    "its whole offerings table was most of the time."
)


def _percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def run(runs: int = RUNS, cache: bool = True) -> dict[str, Any]:
    """The plan's calls and latency; `cache=False`, the deliberately worse variant of the bench's own test: every
    plan with new adapters, so nothing the adapters keep in the process (catalog, offerings, quotas, prices) is
    reused."""
    import boto3
    from moto import mock_aws

    from functions.api.handler import handler
    from functions.shared.adapters.clients import observe_calls, reset_clients, stop_observing
    from functions.shared.adapters.config import reset_settings
    from functions.shared.adapters.wiring import live_ports, reset_ports
    from functions.shared.domain.requests.job_request import JobRequest
    from functions.shared.usecases.capacity.select import plan_request
    from gpupilot.localcloud.deploy import deploy
    from gpupilot.localcloud.dispatch import LocalContext
    from gpupilot.localcloud.embedded_aws import MOTO_CONFIG
    from gpupilot.localcloud.gateway_event import proxy_event
    from gpupilot.localcloud.moto_adaptations import ComputeEnvironmentLifecycle, SpotMarket, adapted_moto
    from gpupilot.localcloud.template import load_template

    os.environ.update(AWS_DEFAULT_REGION=REGION, AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench")
    zones = [f"{REGION}a", f"{REGION}b"]
    calls: list[str] = []

    def count(params: Any, model: Any, **_: Any) -> None:
        calls.append(api_name(model))

    def ports() -> Any:
        if not cache:
            reset_ports()
        return live_ports()

    def invoke(method: str, path: str, body: dict[str, Any] | None = None) -> float:
        if not cache:
            reset_ports()
        began = time.perf_counter()
        headers = {"Content-Type": "application/json"} if body else {}
        event = proxy_event(method, path, headers, json.dumps(body) if body else None)
        answer = handler(event, LocalContext("api", f"arn:aws:lambda:{REGION}:123456789012:function:api"))
        elapsed = time.perf_counter() - began
        if answer["statusCode"] >= 300:
            raise RuntimeError(f"{method} {path}: {answer['statusCode']} {answer['body'][:300]}")
        return elapsed * 1000

    with (
        contextlib.redirect_stdout(io.StringIO()),
        mock_aws(config=MOTO_CONFIG),  # type: ignore[call-overload]
        adapted_moto(
            lifecycle=ComputeEnvironmentLifecycle(0), spot_market=SpotMarket(offered=lambda instance_type: zones)
        ),
    ):
        deployed = deploy(boto3.session.Session(), load_template(), zones)
        os.environ.update(deployed.functions["api"].environment)
        reset_settings()
        reset_clients()
        reset_ports()
        observe_calls(count)
        request = JobRequest.model_validate(BODY)
        plan_request(request, ports())
        cold = list(calls)
        calls.clear()
        plan_request(request, ports())
        warm = list(calls)
        calls.clear()
        plan_request(request.model_copy(update={"capacity": "spot-first"}), ports())
        spot_warm = list(calls)
        stop_observing(count)
        invoke("GET", "/jobs?limit=1")  # the handler's own imports and first clients: not measured
        plans, floors = [], []
        for _ in range(runs):
            floors.append(invoke("GET", "/jobs?limit=1"))
            plans.append(invoke("POST", "/plan", BODY))
    p50, p95 = _percentile(plans, 0.5), _percentile(plans, 0.95)
    return {
        "benchmark": NAME,
        "measured_at": utc_now(),
        "summary": SUMMARY,
        "notes": NOTES,
        "method": __doc__.split("\n\n    python")[0].strip() if __doc__ else "",
        "environment": environment(),
        "metrics": {
            "aws_calls_cold": metric(len(cold), "AWS calls", COLD_BUDGET, goal=at_most(COLD_BUDGET)),
            "aws_calls_warm": metric(len(warm), "AWS calls", WARM_GOAL, goal=at_most(WARM_GOAL)),
            "plan_ms_p50": metric(p50, "ms", _percentile(floors, 0.5)),
            "plan_ms_p95": metric(p95, "ms", _percentile(floors, 0.95)),
        },
        "details": {
            "cold_calls": by_api(cold),
            "warm_calls": by_api(warm),
            "spot_first_warm_calls": by_api(spot_warm),
            "runs": runs,
            "plan_ms_median_of_runs": round(statistics.median(plans), 2),
            "cache": cache,
        },
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument(
        "--no-cache", action="store_true", help="a deliberately worse variant: new adapters for every plan"
    )
    parser.add_argument("--output", help="write the JSON here instead of stdout")
    args = parser.parse_args(argv)
    emit(run(args.runs, cache=not args.no_cache), args.output)


if __name__ == "__main__":
    main()
