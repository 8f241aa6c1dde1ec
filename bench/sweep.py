"""The health sweep at scale: 10,000 RUNNABLE jobs in 20 GPU Pilot queues, 200 instances, GPU Pilot's records
behind most of the jobs, on moto.

What the fleet issue asks: the sweep's AWS calls grow with pages and pools, not with jobs (goal: at most
ceil(jobs/100) + 5 x queues + 10), and its wall time stays close to the time it takes merely to list those jobs
(goal: at most 1.5x). Both are measured in one process, against the same moto state, in rounds: each round lists
the queues' live jobs (ListJobs per queue for RUNNABLE, STARTING and RUNNING, 100 a page: the least any sweep must
do), then sweeps. The first round's sweep is cold (its clients made, the catalog read, caches empty), the later
ones warm; the wall ratio is each round's sweep over that round's listing, and the warm figure is the median of
the warm rounds' ratios. The time moto spends handling each sweep's DynamoDB reads of the index and the ledgers
(its Scans and Queries, from the request to the answer it returns, before botocore parses it) is measured in the same
rounds and reported, with the ratio less it; after the rounds, the same index read is timed whole, with Select=COUNT
(moto's evaluation alone), and one page of 100 items of it against one ListJobs page of 100 jobs. `--counts` measures
the calls alone: `tests/bench/test_sweep.py` holds the product to the budgets with it, at this scale.

Behind the jobs, what a sweep meets in an account: 80% of the live jobs are GPU Pilot's, each with its record in
the index of unfinished jobs (its attempt RUNNABLE, its workflow parked on the start); the others were submitted
into the queues by someone else. Before each round, a few more records are the sweep's per-record work: jobs
that finished in Batch while their records never got the event (0.1% of the jobs: the sweep records the end, prices
the attempt and resumes the workflow), and jobs whose Batch job is gone (0.02%: the sweep fails them and stops
their workflow); between rounds their workflows finish them. The jobs were created an hour ago, so every one is
past its stuck_after and is diagnosed (from its pool's snapshot, read once per pool) and grouped into one finding
per pool and cause. The 200 instances are healthy (registered with their GPU), so no remediation acts.

    python -m bench.sweep [--jobs N] [--queues Q] [--instances I] [--rounds R] [--counts] [--output FILE]
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
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from typing import Any

from bench import api_name, at_most, by_api, emit, environment, metric, utc_now

NAME = "sweep"
JOBS = 10_000
QUEUES = 20
INSTANCES = 200
ROUNDS = 5
OWNED_SHARE = 0.8
FINISHED_SHARE = 0.001
VANISHED_SHARE = 0.0002
ACCOUNT = "123456789012"
REGION = "us-east-1"
PREFIX = "gpupilot"
WALL_GOAL = 1.5  # the fleet issue's: a sweep at most this many times the time it takes merely to list the jobs
SUMMARY = (
    "The health sweep over 10,000 RUNNABLE jobs in 20 GPU Pilot queues with 200 instances, with GPU Pilot's records "
    "behind 80% of the jobs and a few records each round whose Batch job finished unnoticed or vanished. Goals "
    "(fleet issue): at most ceil(jobs/100) + 5 x queues + 10 AWS calls per sweep, and a sweep at most 1.5x the "
    "time it takes merely to list the jobs."
)
# What a new container reads once, and a warm one keeps (a cold sweep's budget is the warm one's and these).
COLD_READS = (
    "ec2:DescribeInstanceTypes",  # the GPU catalog, kept an hour
    "dynamodb:GetItem",  # the Price List through the table's cache (a day), empty in a new deployment
    "pricing:GetProducts",
    "dynamodb:PutItem",
    "servicequotas:GetServiceQuota",  # the vCPU quota, kept 10 minutes
    "ec2:DescribeCapacityReservations",  # the account's reservations, kept a minute
)
# The sweep's reads of DynamoDB whose handling by moto the rounds time.
INDEX_READS = ("Query", "Scan")
NOTES = (
    "Calls: each sweep reads the index of unfinished jobs (it projects only what the sweep reads of a job) and "
    "replays what the events lost for many jobs at once: the attempts' ends with the vanished jobs' failures in "
    "one TransactWriteItems, the records read back in one BatchGetItem, the prices and the spent tokens in one "
    "TransactWriteItems each; each workflow is resumed (SendTaskSuccess) or stopped (StopExecution) by a call of "
    "its own. The 10 ended and 2 vanished records of a round cost 16 calls where they cost 54 (2026-11-24), and the "
    "report is stored by its id and as the latest in one transaction (details.calls_by_api_per_round). The vCPU "
    "quota diagnosis reads the account's running instances (DescribeInstances) once per sweep and capacity type, "
    "and the bad-host quarantine its ledger: with them a warm sweep made 213 calls (2026-11-24), three over the "
    "budget, with the index read by a Query per shard (8: one per shard however few jobs are unfinished) and the "
    "ledger's two kinds by a Query each. Since 2026-11-27 the index is read by a Scan, which pages 1 MB of its "
    "entries at a time whatever the shards, and the ledger's host-side failures and quarantines by one Query of "
    "their sort-key range. A sweep in production runs five minutes after the one before, past the lifetime of "
    "the reservations' cache (a minute) and of every other sweep's quota (10 minutes): it makes one call more "
    "than the bench's warm rounds, which follow each other within seconds, and every other one two. The cold "
    "sweep adds what a new container reads once (details.cold_reads). Before the records stood behind the jobs "
    "(2026-11-23): reading EC2 only for instances ECS does not know took the wall ratio from 2.3x to 1.5x, and "
    "storing each report as one compressed JSON attribute from 1.5x to 1.44x. "
)


@dataclass
class Seeded:
    """What the bench put in moto: the queues, the job definition, and the records' template items."""

    queues: list[str]
    definition: str
    created_at: datetime
    templates: dict[str, dict[str, Any]]


def _seed_pools(deployed: Any, queues: int, instances: int) -> tuple[list[str], str]:
    """Pools (CE + queue) and their healthy instances: the queue names and a job definition."""
    import boto3
    from moto.batch.models import batch_backends
    from moto.ecs.models import ecs_backends

    from functions.shared.domain.pools.specs import POOL_TAG

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
        if not per_pool:
            continue
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
    return names, definition


def _batch_job(seeded: Seeded, name: str, queue: str, status: str) -> str:
    """A Batch job created an hour ago, in `status` (SUCCEEDED: it ran and exited 0); its id."""
    from moto.batch.models import batch_backends
    from moto.batch_simple.models import batch_simple_backends

    _, job_id, _ = batch_simple_backends[ACCOUNT][REGION].submit_job(
        name, seeded.definition, queue, array_properties={}
    )
    job = batch_backends[ACCOUNT][REGION]._jobs[job_id]
    job.job_created_at = seeded.created_at
    if status == "SUCCEEDED":  # as the local cloud's fleet ends a job
        job.job_started_at = seeded.created_at + timedelta(minutes=30)
        job._start_attempt()
        job.exit_code, job.job_stopped, job.job_stopped_reason = 0, True, "Essential container in task exited"
        job.job_stopped_at = seeded.created_at + timedelta(minutes=50)
        job._stop_attempt()
    job.status = status
    return str(job_id)


def _template_item(ports: Any, table: str, queue: str, batch_status: str, phase: str) -> dict[str, Any]:
    """A GPU Pilot job record made by the job store itself, with its attempt in `batch_status` and its workflow
    parked on `phase`: the raw DynamoDB item, to be copied under other ids."""
    import boto3

    from functions.shared.adapters.job_lists import job_key
    from functions.shared.domain.core.vocabulary import AttemptStatus, BatchStatus, CapacityType, JobStatus, WaitPhase
    from functions.shared.domain.jobs.records import AttemptRecord, Wait
    from functions.shared.domain.requests.job_request import JobRequest

    job_id = uuid.uuid4().hex[:20]
    request = JobRequest.model_validate({"name": "bench", "image": "nvidia/cuda", "command": ["nvidia-smi"]})
    ports.jobs.create_job(job_id, request)
    ports.jobs.set_execution_arn(job_id, f"arn:aws:states:{REGION}:{ACCOUNT}:execution:GpuJob:{job_id}")
    status = BatchStatus(batch_status)
    attempt = AttemptRecord(
        instance_type="g4dn.xlarge",
        gpu_model="T4",
        capacity=CapacityType.ON_DEMAND,
        zones=[f"{REGION}a"],
        job_queue=queue,
        status=AttemptStatus(status.value),
        batch_job_id="BATCH-JOB-ID",
        batch_status=status,
        batch_status_at="2026-01-01T00:00:00.000Z",
    )
    ports.jobs.put_attempt(job_id, 1, attempt)
    ports.jobs.advance(job_id, JobStatus.RUNNABLE, attempt=1)
    if status == BatchStatus.RUNNING:
        ports.jobs.advance(job_id, JobStatus.RUNNING, attempt=1)
    ports.jobs.store_wait(job_id, WaitPhase(phase), Wait(attempt=1, token=f"token-{phase}"))
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    item = dynamodb.get_item(TableName=table, Key=job_key(job_id))["Item"]
    dynamodb.delete_item(TableName=table, Key=job_key(job_id))  # a template, not a job
    return {"job_id": job_id, "item": item}


def _write_records(table: str, template: dict[str, Any], records: list[tuple[str, str]]) -> None:
    """Copies of the template item, one per (job id, Batch job id), in the index of unfinished jobs."""
    import boto3

    from functions.shared.adapters.job_lists import list_keys

    text = json.dumps(template["item"])
    items = []
    for job_id, batch_job_id in records:
        item = json.loads(text.replace(template["job_id"], job_id).replace("BATCH-JOB-ID", batch_job_id))
        created = item["created_at"]["S"]
        item |= {name: {"S": value} for name, value in list_keys(job_id, created).items()}
        items.append(item)
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    for start in range(0, len(items), 25):
        requests = [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]
        while requests:
            requests = (
                dynamodb.batch_write_item(RequestItems={table: requests}).get("UnprocessedItems", {}).get(table, [])
            )


def seed(deployed: Any, ports: Any, jobs: int, queues: int, instances: int) -> Seeded:
    """The pools, their instances, the live jobs and, behind OWNED_SHARE of them, GPU Pilot's records."""
    from functions.shared.domain.jobs.lifecycle import batch_job_name

    table = deployed.table_name
    names, definition = _seed_pools(deployed, queues, instances)
    seeded = Seeded(names, definition, datetime.now() - timedelta(hours=1), {})
    for kind, (batch_status, phase) in {"live": ("RUNNABLE", "start"), "finished": ("RUNNING", "finish")}.items():
        seeded.templates[kind] = _template_item(ports, table, names[0], batch_status, phase)
    owned = round(jobs * OWNED_SHARE)
    records = []
    for index in range(jobs):
        queue = names[index % queues]
        if index < owned:
            job_id = f"{index:020x}"
            records.append((job_id, _batch_job(seeded, batch_job_name(job_id, 1), queue, "RUNNABLE")))
        else:
            _batch_job(seeded, f"someone-else-{index}", queue, "RUNNABLE")
    _write_records(table, seeded.templates["live"], records)
    return seeded


def per_record_work(seeded: Seeded, table: str, finished: int, vanished: int) -> list[str]:
    """This round's records whose Batch job finished unnoticed, and whose Batch job is gone: their job ids."""
    from functions.shared.domain.jobs.lifecycle import batch_job_name

    ended: list[tuple[str, str]] = []
    for _ in range(finished):
        job_id = uuid.uuid4().hex[:20]
        queue = seeded.queues[len(ended) % len(seeded.queues)]
        ended.append((job_id, _batch_job(seeded, batch_job_name(job_id, 1), queue, "SUCCEEDED")))
    gone = [(uuid.uuid4().hex[:20], str(uuid.uuid4())) for _ in range(vanished)]
    _write_records(table, seeded.templates["finished"], ended)
    _write_records(table, seeded.templates["live"], gone)
    return [job_id for job_id, _ in ended]


def describing_each_listed_job() -> type[Any]:
    """A deliberately worse Batch adapter (the bench's own test): one DescribeJobs per job it lists."""
    from functions.shared.adapters.batch import BatchJobsAdapter
    from functions.shared.domain.fleet.batch import BatchJobState

    class DescribingEachJob(BatchJobsAdapter):
        def list_jobs(self, job_queue: str, status: str) -> list[BatchJobState]:
            listed = super().list_jobs(job_queue, status)
            for job in listed:
                self.describe_jobs([job.job_id])
            return listed

    return DescribingEachJob


@dataclass
class Rounds:
    """What the rounds measured: per round, the sweep's AWS calls by API ("dynamodb:Query") and its wall time, the
    listing's, and moto's handling of the sweep's index and ledger reads; the last report; moto's read costs."""

    calls: list[dict[str, int]]
    sweeps: list[float]
    listings: list[float]
    moto_reads: list[float]
    report: Any
    moto: dict[str, float]


def budget(jobs: int, queues: int) -> int:
    """The fleet issue's budget of AWS calls for a warm sweep: pages of 100 jobs, five calls per queue, ten more."""
    return math.ceil(jobs / 100) + 5 * queues + 10


def cold_budget(jobs: int, queues: int) -> int:
    """A cold sweep's budget: the warm one's, and what a new container reads once (COLD_READS)."""
    return budget(jobs, queues) + len(COLD_READS)


class CachesClock:
    """The product's in-process caches' view of `time`: as it is, but with `monotonic()` taken back by `rewind()` to
    where it stood when the rounds began. Every warm round then finds what the rounds before it kept, however long a
    round took on a busy machine: a cache's lifetime (the reservations' is a minute) must not make a sweep's calls
    depend on the machine's speed."""

    def __init__(self) -> None:
        self._began = time.monotonic()
        self._behind = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    def monotonic(self) -> float:
        return time.monotonic() - self._behind

    def rewind(self) -> None:
        self._behind = time.monotonic() - self._began


@contextlib.contextmanager
def caches_clock() -> Iterator[CachesClock]:
    """A CachesClock for the modules whose caches time their entries, while the context lasts."""
    from functions.shared.adapters import base, ec2, prices, quotas

    clock = CachesClock()
    modules = (base, ec2, prices, quotas)
    for module in modules:
        module.time = clock  # type: ignore[attr-defined]
    try:
        yield clock
    finally:
        for module in modules:
            module.time = time  # type: ignore[attr-defined]


def measure(
    jobs: int = JOBS,
    queues: int = QUEUES,
    instances: int = INSTANCES,
    rounds: int = ROUNDS,
    describe_each_listed_job: bool = False,
    timed: bool = True,
) -> Rounds:
    """The rounds, in this process (moto's state is global to it); `timed=False` counts the sweeps' calls alone and
    skips what only the timings need (the listing each round is weighed against, the report's extra sweep, moto's
    read costs): at 10,000 jobs, two fifths of the work."""
    import boto3
    from moto import mock_aws

    from functions.shared.adapters.clients import observe_calls, reset_clients, stop_observing
    from functions.shared.adapters.config import reset_settings, settings
    from functions.shared.adapters.wiring import LivePorts, reset_ports
    from functions.shared.domain.core.vocabulary import JobStatus
    from functions.shared.usecases.health.jobs import list_live_jobs
    from functions.shared.usecases.health.sweep import run_sweep
    from gpupilot.localcloud.deploy import deploy
    from gpupilot.localcloud.embedded_aws import MOTO_CONFIG
    from gpupilot.localcloud.moto_adaptations import ComputeEnvironmentLifecycle, adapted_moto
    from gpupilot.localcloud.template import load_template

    os.environ.update(AWS_DEFAULT_REGION=REGION, AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench")
    finished, vanished = max(1, round(jobs * FINISHED_SHARE)), max(1, round(jobs * VANISHED_SHARE))
    calls: list[str] = []

    def count(params: Any, model: Any, **_: Any) -> None:
        calls.append(api_name(model))

    class WorsePorts(LivePorts):
        @cached_property
        def batch(self) -> Any:
            return describing_each_listed_job()()

    ports_type = WorsePorts if describe_each_listed_job else LivePorts
    measured = Rounds(calls=[], sweeps=[], listings=[], moto_reads=[], report=None, moto={})
    # The sweep's per-pool metrics print as EMF lines (CloudWatch reads them from the log): not here.
    with (
        contextlib.redirect_stdout(io.StringIO()),
        mock_aws(config=MOTO_CONFIG),  # type: ignore[call-overload]
        adapted_moto(on_job_submitted=lambda job: None, lifecycle=ComputeEnvironmentLifecycle(0)),
        caches_clock() as clock,
    ):
        deployed = deploy(boto3.session.Session(), load_template(), [f"{REGION}a", f"{REGION}b"])
        os.environ.update(deployed.functions["health_sweep"].environment)
        reset_settings()
        reset_clients()
        reset_ports()
        seeded = seed(deployed, LivePorts(settings()), jobs, queues, instances)
        # A fresh process's clients and caches: the first round's sweep is cold. Observed from the start: clients
        # take the session's event hooks when they are made.
        reset_clients()
        observe_calls(count)
        ports = ports_type(settings())
        floor = LivePorts(settings())  # the listing, with the plain adapter whatever the sweep's
        for _ in range(rounds):
            ended = per_record_work(seeded, deployed.table_name, finished, vanished)
            clock.rewind()  # the rounds follow each other within the caches' lifetimes, whatever the machine
            calls.clear()
            if timed:
                began = time.perf_counter()
                list_live_jobs(seeded.queues, floor)
                measured.listings.append(time.perf_counter() - began)
                calls.clear()
            with moto_handling(INDEX_READS) as handled:
                began = time.perf_counter()
                run_sweep(None, ports)
                measured.sweeps.append(time.perf_counter() - began)
            measured.moto_reads.append(sum(handled))
            measured.calls.append(by_api(calls))
            for job_id in ended:  # their workflows, resumed by the sweep, record their end
                ports.jobs.finish(job_id, JobStatus.SUCCEEDED)
        stop_observing(count)
        if timed:
            measured.report = run_sweep(None, ports)
            measured.moto = moto_read_cost(deployed.table_name, seeded.queues[0], ports)
    return measured


def counts(
    jobs: int = JOBS,
    queues: int = QUEUES,
    instances: int = INSTANCES,
    rounds: int = 2,
    describe_each_listed_job: bool = False,
) -> dict[str, Any]:
    """The sweep's AWS calls alone (no timing): a cold round, then warm ones; with the budgets they are held to."""
    measured = measure(jobs, queues, instances, rounds, describe_each_listed_job, timed=False)
    return {
        "jobs": jobs,
        "queues": queues,
        "budget": budget(jobs, queues),
        "cold_budget": cold_budget(jobs, queues),
        "calls_by_api_per_round": measured.calls,
        "totals": [sum(round_calls.values()) for round_calls in measured.calls],
    }


def run(
    jobs: int = JOBS,
    queues: int = QUEUES,
    instances: int = INSTANCES,
    rounds: int = ROUNDS,
    describe_each_listed_job: bool = False,
) -> dict[str, Any]:
    measured = measure(jobs, queues, instances, rounds, describe_each_listed_job)
    sweeps, listings, moto_reads, moto = measured.sweeps, measured.listings, measured.moto_reads, measured.moto
    warm_budget = budget(jobs, queues)
    ratios = [sweep / listing for sweep, listing in zip(sweeps, listings, strict=True)]
    totals = [sum(round_calls.values()) for round_calls in measured.calls]
    warm_ratios, warm_calls = ratios[1:] or ratios, totals[1:] or totals
    warm_sweep, warm_listing = statistics.median(sweeps[1:] or sweeps), statistics.median(listings[1:] or listings)
    less_moto = statistics.median(
        (sweep - moto_read) / listing
        for sweep, moto_read, listing in list(zip(sweeps, moto_reads, listings, strict=True))[1:]
        or list(zip(sweeps, moto_reads, listings, strict=True))
    )
    parsed = moto["index_read_seconds"] - moto["index_read_moto_handling_seconds"] - moto["index_read_decode_seconds"]
    warm_ratio = statistics.median(warm_ratios)
    moto_warm = statistics.median(moto_reads[1:] or moto_reads)
    index_pages = statistics.median(
        round_calls.get("dynamodb:Scan", 0) for round_calls in (measured.calls[1:] or measured.calls)
    )
    calls_warm, calls_cold = (
        f"api_calls_warm_sweep_{jobs}_jobs_{queues}_queues",
        f"api_calls_cold_sweep_{jobs}_jobs_{queues}_queues",
    )
    # The run's words, chosen by its figures; the figures are left to the page (placeholders bench/render.py fills from
    # the metrics and details.cited), so words and table cannot disagree.
    found = [
        f"Calls: a warm sweep makes {{{calls_warm}}} against the budget of {{{calls_warm}.baseline}} (the goal is "
        f"{{{calls_warm}.verdict}}), the cold one {{{calls_cold}}} against {{{calls_cold}.baseline}} "
        f"({{{calls_cold}.verdict}}); the index of {{details.cited.index_items}} unfinished jobs is read in "
        "{details.cited.index_scan_pages} Scan pages.",
        "Wall time: a warm sweep is {wall_ratio_vs_listing_warm_median}x its listing against the goal of "
        "{wall_ratio_vs_listing_warm_median.target}x ({wall_ratio_vs_listing_warm_median.verdict}), the cold one "
        "{wall_ratio_vs_listing_cold_sweep}x ({wall_ratio_vs_listing_cold_sweep.verdict}); less moto's own handling "
        "of its DynamoDB reads of the index and the ledgers, measured in the same rounds, a warm sweep is "
        "{wall_ratio_vs_listing_warm_median_less_moto_s_reads}x "
        "({wall_ratio_vs_listing_warm_median_less_moto_s_reads.verdict}).",
    ]
    if warm_ratio > WALL_GOAL:
        found.append(
            "Most of the gap is moto's DynamoDB, a cost AWS does not have: moto spent a median "
            "{details.cited.moto_read_seconds_warm_median} s of a warm sweep's {sweep_seconds_warm_median} s "
            "handling those reads (it evaluates them in Python, walking the table's items and deep-copying each entry "
            "it returns, then turns its answer into plain data and JSON), and a Scan page of 100 index items took it "
            "{details.cited.scan_page_of_100_ms} ms against "
            "{details.cited.list_jobs_page_of_100_ms} ms for a ListJobs page of 100 jobs (details.moto). What is "
            "left is ours or botocore's: the sweep's own listing (as long as the listing: it lists the queues as the "
            "listing does), the index's {details.cited.index_items} items parsed (botocore's parser, with the glue "
            "between botocore and moto's handler: {details.cited.index_parse_seconds} s, a client's cost on AWS too) "
            "and decoded into the sweep's view (GPU Pilot, {details.cited.index_decode_seconds} s), and the other "
            "calls (ECS per pool, the replays, the report) with moto's handling of them. Decoding only the records "
            "that need work would save at most the decoding ({details.cited.decode_vs_listing}x the listing): "
            "telling them apart needs each record's latest attempt (its Batch status and reason, against the "
            "listing) and its waits with their attempts' statuses, reasons and verdicts (a lost SendTaskSuccess, a "
            "verdict not acted on) - most of what the index projects - so the saving would be a fraction of that, "
            "bought by restating the wait rules on a partial view; not done."
        )
    found.append(
        "Wall figures on the shared machine move by a factor of two between runs (details.listing_seconds_per_round)."
    )
    cited = {
        "moto_read_seconds_warm_median": round(moto_warm, 1),
        "scan_page_of_100_ms": round(moto["scan_page_of_100_seconds"] * 1000),
        "index_scan_pages": index_pages,
        "list_jobs_page_of_100_ms": round(moto["list_jobs_page_of_100_seconds"] * 1000),
        "index_items": round(jobs * OWNED_SHARE),
        "index_parse_seconds": round(parsed, 1),
        "index_decode_seconds": round(moto["index_read_decode_seconds"], 1),
        "decode_vs_listing": round(moto["index_read_decode_seconds"] / warm_listing, 1),
    }
    return {
        "benchmark": NAME,
        "measured_at": utc_now(),
        "summary": SUMMARY,
        "notes": NOTES + " ".join(found),
        "method": __doc__.split("\n\n    python")[0].strip() if __doc__ else "",
        "environment": environment(),
        "metrics": {
            calls_cold: metric(
                totals[0], "AWS calls", cold_budget(jobs, queues), goal=at_most(cold_budget(jobs, queues))
            ),
            calls_warm: metric(max(warm_calls), "AWS calls", warm_budget, goal=at_most(warm_budget)),
            "wall_ratio_vs_listing_cold_sweep": metric(ratios[0], "x", WALL_GOAL, goal=at_most(WALL_GOAL)),
            "wall_ratio_vs_listing_warm_median": metric(warm_ratio, "x", WALL_GOAL, goal=at_most(WALL_GOAL)),
            "sweep_seconds_warm_median": metric(warm_sweep, "s", warm_listing),
            "wall_ratio_vs_listing_warm_median_less_moto_s_reads": metric(
                less_moto, "x", WALL_GOAL, goal=at_most(WALL_GOAL)
            ),
        },
        "details": {
            "jobs": jobs,
            "queues": queues,
            "instances": instances,
            "rounds": rounds,
            "budget": warm_budget,
            "cold_budget": cold_budget(jobs, queues),
            "cold_reads": list(COLD_READS),
            "records": {
                "live": round(jobs * OWNED_SHARE),
                "finished_unnoticed_per_round": max(1, round(jobs * FINISHED_SHARE)),
                "vanished_per_round": max(1, round(jobs * VANISHED_SHARE)),
            },
            "calls_by_api_per_round": measured.calls,
            "findings": [
                {"kind": f.kind.value, "resource": f.resource, "jobs": f.evidence.get("jobs_stuck")}
                for f in measured.report.findings
            ][:5],
            "sweep_seconds_per_round": [round(s, 3) for s in sweeps],
            "listing_seconds_per_round": [round(s, 3) for s in listings],
            "wall_ratio_per_round": [round(r, 3) for r in ratios],
            "moto_read_handling_seconds_per_round": [round(s, 3) for s in moto_reads],
            "moto": {name: round(value, 4) for name, value in moto.items()},
            "cited": cited,
            "describe_each_listed_job": describe_each_listed_job,
        },
    }


@contextlib.contextmanager
def moto_handling(operations: tuple[str, ...]) -> Iterator[list[float]]:
    """Seconds moto spends handling each DynamoDB call of `operations` meanwhile: from the request it was given to
    the answer it returns (evaluation and answer, not botocore's parsing of it), in the list yielded."""
    from moto.dynamodb.responses import DynamoHandler

    spent: list[float] = []
    handle = DynamoHandler.call_action

    def timed(self: Any) -> Any:
        if str(self.headers.get("X-Amz-Target", "")).rsplit(".", 1)[-1] not in operations:
            return handle(self)
        began = time.perf_counter()
        try:
            return handle(self)
        finally:
            spent.append(time.perf_counter() - began)

    DynamoHandler.call_action = timed  # type: ignore[method-assign]
    try:
        yield spent
    finally:
        DynamoHandler.call_action = handle  # type: ignore[method-assign]


def moto_read_cost(table: str, queue: str, ports: Any, repeats: int = 3) -> dict[str, float]:
    """What moto spends answering the sweep's read of the index of unfinished jobs, beside a ListJobs page: the
    read as the sweep makes it, the same scan with Select=COUNT (moto evaluates every entry it reads and answers a
    number: its own work, before any answer is built or parsed), the decoding of the items read into the sweep's
    view (GPU Pilot's own part of the read), and one page of 100 items of each API. Medians of `repeats`."""
    from functions.shared import constants as c
    from functions.shared.adapters.clients import client
    from functions.shared.adapters.job_lists import active_job_of

    dynamodb, batch = client("dynamodb"), client("batch")
    index = {"TableName": table, "IndexName": c.GSI2_NAME}

    def timed(action: Any) -> float:
        times = []
        for _ in range(repeats):
            began = time.perf_counter()
            action()
            times.append(time.perf_counter() - began)
        return statistics.median(times)

    reads: list[float] = []
    handling: list[float] = []
    for _ in range(repeats):
        with moto_handling(("Scan",)) as handled:
            began = time.perf_counter()
            ports.jobs.active_jobs()
            reads.append(time.perf_counter() - began)
        handling.append(sum(handled))
    items = [item for page in dynamodb.get_paginator("scan").paginate(**index) for item in page["Items"]]
    return {
        "index_read_seconds": statistics.median(reads),
        "index_read_moto_handling_seconds": statistics.median(handling),
        "index_read_decode_seconds": timed(lambda: [active_job_of(item) for item in items]),
        "index_read_count_only_seconds": timed(
            lambda: list(dynamodb.get_paginator("scan").paginate(**index, Select="COUNT"))
        ),
        "scan_page_of_100_seconds": timed(lambda: dynamodb.scan(**index, Limit=100)),
        "list_jobs_page_of_100_seconds": timed(
            lambda: batch.list_jobs(jobQueue=queue, jobStatus="RUNNABLE", maxResults=100)
        ),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=JOBS)
    parser.add_argument("--queues", type=int, default=QUEUES)
    parser.add_argument("--instances", type=int, default=INSTANCES)
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument(
        "--describe-each-listed-job",
        action="store_true",
        help="a deliberately worse Batch adapter: one DescribeJobs per job it lists (the bench's own test)",
    )
    parser.add_argument(
        "--counts", action="store_true", help="the sweep's AWS calls by API per round and their budgets, no timing"
    )
    parser.add_argument("--output", help="write the JSON here instead of stdout")
    args = parser.parse_args(argv)
    measure = counts if args.counts else run
    emit(measure(args.jobs, args.queues, args.instances, args.rounds, args.describe_each_listed_job), args.output)


if __name__ == "__main__":
    main()
