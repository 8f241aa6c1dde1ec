"""A bad GPU host stops eating jobs: found from the evidence a real account shows, quarantined, its jobs retried
elsewhere; and a pool whose hosts are mostly bad gets one finding and no mass termination. Through the HTTP API, the
CLI and the local cloud's own Batch, ECS and EC2 endpoints."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.conftest import RunningCloud
from tests.e2e.test_fleet_diagnosis import aws

pytestmark = pytest.mark.e2e
TYPE = "g4dn.xlarge"
# (A day's wait for a GPU: however far a test moves the local cloud's clock, no job is diagnosed for waiting.)
JOB = {"name": "fleet", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["python3", "train.py"],
       "instance_types": [TYPE], "stuck_after_minutes": 1440}  # fmt: skip
JOBS = 20
# How long each job a bad host fails holds it, in the local cloud's time, when a test says (the world's default: 10 s).
# Ten minutes: far longer than a sweep takes on any machine, however busy, so that a host is quarantined before it can
# fail another job; the test moves the clock past a hold when it wants the host's next failure.
LONG_HOLD_SECONDS = 600
# Jobs of five minutes, when a test moves the clock itself: the jobs queued behind the first failure are still queued
# when the test moves the clock past its hold, however long a busy machine took to see that failure.
LONG_JOB_SECONDS = 300


def world(symptom: str, share: float, hold_seconds: float | None = None, runtime_seconds: float = 3) -> dict[str, Any]:
    """A pool of four g4dn.xlarge (the account's on-demand G quota is 16 vCPUs), `share` of them bad, seed 1."""
    bad_hosts: dict[str, Any] = {"share": share, "symptom": symptom, "seed": 1}
    if hold_seconds is not None:
        bad_hosts["hold_seconds"] = hold_seconds
    return {"instance_types": {TYPE: {"bad_hosts": bad_hosts}}, "quotas": {"L-DB2E81BA": 16},
            "jobs": {"runtime_seconds": runtime_seconds}}  # fmt: skip


def submit_jobs(cloud: RunningCloud, count: int = JOBS) -> list[str]:
    return [cloud.api.request("POST", "/jobs", JOB).body["job_id"] for _ in range(count)]


def ended(cloud: RunningCloud, ids: list[str]) -> list[dict[str, Any]]:
    """Each job once it has ended."""
    return [cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"}) for job_id in ids]


def run_out(cloud: RunningCloud, ids: list[str], job_seconds: float) -> list[dict[str, Any]]:
    """Each job once it has ended, the local cloud's clock moved a job's length each time the jobs running are new
    ones (they end, and the hosts take the next)."""
    moved_past: set[str] = set()

    def all_ended() -> list[dict[str, Any]] | None:
        jobs = [dict(cloud.api.request("GET", f"/jobs/{job_id}").body) for job_id in ids]
        if all(job["status"] in ("SUCCEEDED", "FAILED") for job in jobs):
            return jobs
        running = {job["job_id"] for job in jobs if job["status"] == "RUNNING"}
        if running and not running & moved_past:
            cloud.advance(job_seconds)
            moved_past.update(running)
        return None

    return list(cloud.until("every job ended", all_ended, every=0.5))


def run_jobs(cloud: RunningCloud, count: int = JOBS) -> list[dict[str, Any]]:
    """Submit `count` jobs at once and wait for each to end."""
    return ended(cloud, submit_jobs(cloud, count))


def failed_starts(cloud: RunningCloud, ids: list[str]) -> int:
    """How many of the jobs' Batch attempts so far failed to start (what a host without a visible GPU does)."""
    batch_ids = [a["batch_job_id"] for i in ids for a in cloud.api.request("GET", f"/jobs/{i}").body["attempts"]
                 if a.get("batch_job_id")]  # fmt: skip
    described = [j for start in range(0, len(batch_ids), 100)
                 for j in aws(cloud, "batch").describe_jobs(jobs=batch_ids[start : start + 100])["jobs"]]  # fmt: skip
    return sum(a.get("statusReason") == "Task failed to start" for job in described for a in job["attempts"])


def attempts_by_host(cloud: RunningCloud, jobs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Container instance ARN -> every Batch attempt that ran there, as Batch's DescribeJobs shows them."""
    batch = aws(cloud, "batch")
    ids = [attempt["batch_job_id"] for job in jobs for attempt in job["attempts"]]
    hosts: dict[str, list[dict[str, Any]]] = {}
    for start in range(0, len(ids), 100):
        for described in batch.describe_jobs(jobs=ids[start : start + 100])["jobs"]:
            for attempt in described["attempts"]:
                hosts.setdefault(attempt["container"]["containerInstanceArn"], []).append(attempt)
    return hosts


def container_instances(cloud: RunningCloud) -> dict[str, dict[str, Any]]:
    """Container instance ARN -> ECS's description, across the local cloud's clusters."""
    ecs = aws(cloud, "ecs")
    found: dict[str, dict[str, Any]] = {}
    for cluster in ecs.list_clusters()["clusterArns"]:
        arns = ecs.list_container_instances(cluster=cluster)["containerInstanceArns"]
        for start in range(0, len(arns), 100):
            described = ecs.describe_container_instances(cluster=cluster, containerInstances=arns[start : start + 100])
            found |= {c["containerInstanceArn"]: c for c in described["containerInstances"]}
    return found


def instance_state(cloud: RunningCloud, instance_id: str) -> str:
    reservations = aws(cloud, "ec2").describe_instances(InstanceIds=[instance_id])["Reservations"]
    return str(reservations[0]["Instances"][0]["State"]["Name"])


def findings_of(cloud: RunningCloud, kind: str) -> list[dict[str, Any]]:
    """The latest sweep's findings of `kind`, once a sweep (one the evidence started) has made one."""
    return list(
        cloud.until(
            f"a {kind} finding",
            lambda: [f for f in cloud.api.request("GET", "/health").body["findings"] if f["kind"] == kind],
            every=0.5,
        )
    )


def test_one_bad_host_in_four_is_quarantined_after_its_second_failure_and_every_job_succeeds(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given four hosts, one whose GPU is not visible to containers (each job it fails holds it ten minutes), jobs of
    # five minutes, and no sweep on a timer: any sweep is one the evidence started
    world_ = world("no_gpu_visible", 0.25, hold_seconds=LONG_HOLD_SECONDS, runtime_seconds=LONG_JOB_SECONDS)
    cloud = cloud_factory(world_, sweep_seconds=0)

    # When twenty jobs run: once the bad host has failed its first, the local cloud's clock moves past its hold (the
    # jobs running end, and each host takes one of those queued), and once a sweep has dealt with the host, a job's
    # length at a time until every job has ended
    ids = submit_jobs(cloud)
    cloud.until("the bad host's first failure", lambda: failed_starts(cloud, ids), every=0.5)
    cloud.advance(LONG_HOLD_SECONDS)
    findings_of(cloud, "BAD_GPU_HOST")
    jobs = run_out(cloud, ids, LONG_JOB_SECONDS)

    # Then every job succeeded, each attempt the bad host failed retried elsewhere by Batch, no more than two of them
    assert [job["status"] for job in jobs] == ["SUCCEEDED"] * JOBS, [j["error"] for j in jobs if j["error"]]
    hosts = attempts_by_host(cloud, jobs)
    bad = {
        arn: tried
        for arn, tried in hosts.items()
        if any(a.get("statusReason") == "Task failed to start" for a in tried)
    }
    assert len(bad) == 1, sorted(bad)
    [(arn, tried)] = bad.items()
    # (Batch keeps 255 characters of the reason: the NVIDIA runtime's hook is named, its own words cut off)
    assert len(tried) == 2 and all("error running hook" in a["container"]["reason"] for a in tried)
    # And the sweep the second failure started quarantined it: drained in ECS, then terminated in EC2 (which ECS
    # deregisters: "If you terminate a running container instance, Amazon ECS automatically deregisters" it)
    described = container_instances(cloud)[arn]
    assert instance_state(cloud, described["ec2InstanceId"]) == "terminated" and described["status"] == "INACTIVE"
    # And /health shows the finding with its evidence and what was done
    [finding] = findings_of(cloud, "BAD_GPU_HOST")
    assert finding["instances"] == [described["ec2InstanceId"]]
    assert finding["evidence"]["reason"] == "host_failures" and len(finding["evidence"]["jobs_hit"]) == 2
    assert finding["evidence"]["last_failure"].startswith("CannotStartContainerError")
    assert any("RmInitAdapter failed" in line for line in finding["evidence"]["kernel_gpu_errors"])
    assert "drained" in finding["action"] and f"terminated {described['ec2InstanceId']}" in finding["action"]
    # And the timeline of each job it hit says so
    note = f"host {described['ec2InstanceId']} quarantined: "
    timelines = {j["job_id"]: cloud.api.request("GET", f"/jobs/{j['job_id']}").body["timeline"] for j in jobs}
    noted = [
        job_id for job_id, timeline in timelines.items() if any((e["reason"] or "").startswith(note) for e in timeline)
    ]
    assert sorted(noted) == sorted(finding["evidence"]["jobs_hit"])
    # And plain `gpupilot status` of each says why Batch ran it again: the host, its failure, the quarantine; its
    # timeline names the note instead of repeating a status
    for job_id in noted:
        shown = cloud.cli("status", job_id)
        assert shown.returncode == 0, shown.stderr
        retried = " ".join(shown.stdout.split()).split("retried ", 1)[-1]
        assert retried.startswith(f"Batch attempt 1 on host {described['ec2InstanceId']}: Task failed to start"), (
            shown.stdout
        )
        assert f"host {described['ec2InstanceId']} quarantined at " in retried, shown.stdout
        assert f"-> host {described['ec2InstanceId']} quarantined " in " ".join(shown.stdout.split()), shown.stdout
    # And its cost since its first failure is waste (bad_host), next to what the jobs cost
    costs = cloud.api.request("GET", "/costs").body
    assert costs["waste"]["by_reason"]["bad_host"] > 0


def test_a_host_that_fails_its_boot_check_never_runs_a_job_and_one_sweep_quarantines_it(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given four hosts, one of which fails the launch template's boot-time GPU check
    cloud = cloud_factory(world("boot_check_fails", 0.25), sweep_seconds=0)

    # When twenty jobs run, and then a sweep
    jobs = run_jobs(cloud)
    swept = cloud.cli("--json", "sweep")
    assert swept.returncode == 0, swept.stderr

    # Then every job succeeded, none of them on the host that failed its check
    assert [job["status"] for job in jobs] == ["SUCCEEDED"] * JOBS, [j["error"] for j in jobs if j["error"]]
    [finding] = [f for f in json.loads(swept.stdout)["findings"] if f["kind"] == "BAD_GPU_HOST"]
    [instance] = finding["instances"]
    ran_on = {
        c["ec2InstanceId"] for arn, c in container_instances(cloud).items() if arn in attempts_by_host(cloud, jobs)
    }
    assert instance not in ran_on
    # And the finding quotes what the host printed, and says the host was drained and terminated
    assert finding["evidence"]["reason"] == "boot_check_failed"
    assert finding["evidence"]["boot_check"].startswith("gpupilot-boot-check: FAIL")
    assert "drained" in finding["action"] and instance_state(cloud, instance) == "terminated"


def test_a_pool_whose_hosts_are_mostly_bad_gets_one_pool_finding_and_no_mass_termination(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given four hosts, three of them bad
    cloud = cloud_factory(world("no_gpu_visible", 0.75), sweep_seconds=0)

    # When jobs run on them (some may fail: most hosts are bad)
    jobs = run_jobs(cloud, 8)

    # Then the sweep the evidence started reports the pool, recommending to look at what the hosts share
    [finding] = findings_of(cloud, "POOL_UNHEALTHY")
    assert finding["resource"] == jobs[0]["attempts"][0]["job_queue"]
    assert finding["evidence"]["hosts_unhealthy"] > finding["evidence"]["allowed_at_once"]
    assert "AMI" in finding["recommendation"] and "no host quarantined" in finding["action"]
    # And no host was quarantined: none drained, none reported as a bad host
    assert [c for c in container_instances(cloud).values() if c["status"] == "DRAINING"] == []
    assert [f for f in cloud.api.request("GET", "/health").body["findings"] if f["kind"] == "BAD_GPU_HOST"] == []


def one_host_exiting(code: int) -> dict[str, Any]:
    """One g4dn.xlarge at a time (a G and VT quota of its 4 vCPUs), every job's program exiting `code`."""
    return {"quotas": {"L-DB2E81BA": 4}, "jobs": {"runtime_seconds": 1, "exit_code": code}}


def batch_attempts_of(cloud: RunningCloud, job: dict[str, Any]) -> list[dict[str, Any]]:
    """Batch's own attempts of the job's one GPU Pilot attempt, as DescribeJobs shows them."""
    [attempt] = job["attempts"]
    [described] = aws(cloud, "batch").describe_jobs(jobs=[attempt["batch_job_id"]])["jobs"]
    return list(described["attempts"])


def test_user_programs_exiting_with_the_smoke_tests_codes_neither_retry_nor_count_against_their_host(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given one healthy host, and two jobs whose own programs exit 14 (the smoke test's CUDA-error code)
    cloud = cloud_factory(one_host_exiting(14), sweep_seconds=0)

    # When both run on it, one after the other, and a sweep runs
    jobs = run_jobs(cloud, 2)
    swept = cloud.cli("--json", "sweep")

    # Then each failed after one run of its program (Batch did not run it again), on the same host
    assert [job["status"] for job in jobs] == ["FAILED", "FAILED"]
    runs = [batch_attempts_of(cloud, job) for job in jobs]
    assert [len(r) for r in runs] == [1, 1], runs
    [host] = {r[0]["container"]["containerInstanceArn"] for r in runs}
    # And the host is not a bad host: no finding, still taking jobs
    assert swept.returncode == 0, swept.stderr
    assert [f for f in json.loads(swept.stdout)["findings"] if f["kind"] == "BAD_GPU_HOST"] == []
    assert container_instances(cloud)[host]["status"] == "ACTIVE"


def test_the_smoke_tests_failures_are_retried_and_count_against_their_host(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given one host on which the CUDA smoke test exits 14 (a CUDA error), and no sweep on a timer
    cloud = cloud_factory(one_host_exiting(14), sweep_seconds=0)

    # When the smoke test runs twice, through the CLI
    ids = []
    for _ in range(2):
        submitted = cloud.cli("--json", "submit", "--smoke", "--instance-type", TYPE, "--stuck-after-minutes", "30")
        assert submitted.returncode == 0, submitted.stderr
        ids.append(json.loads(submitted.stdout)["job_id"])
    jobs = [cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"}, 240) for job_id in ids]

    # Then Batch ran the first one again after its CUDA error (on the host, then elsewhere once it was quarantined)
    assert len(batch_attempts_of(cloud, jobs[0])) > 1, batch_attempts_of(cloud, jobs[0])
    # And the two smoke tests' failures quarantined the host they ran on first (every host fails them here: any host
    # they ran on after it too), each finding quoting the check's code
    first_host = batch_attempts_of(cloud, jobs[0])[0]["container"]["containerInstanceArn"]
    found = findings_of(cloud, "BAD_GPU_HOST")
    assert container_instances(cloud)[first_host]["ec2InstanceId"] in {i for f in found for i in f["instances"]}
    assert all(f["evidence"]["last_failure"].startswith("exit code 14") for f in found), found
