"""The scheduled sweep, `health`, `sweep` and `costs` through the local cloud and the CLI."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from functions.shared.domain.core.clock import seconds_between
from tests.e2e.conftest import RunningCloud

pytestmark = pytest.mark.e2e
JOB = {"name": "costed", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"]}


def test_the_local_cloud_runs_the_sweep_on_its_schedule_as_its_clock_passes_the_period(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a local cloud that sweeps every 5 minutes of its clock (the deployed schedule), not swept yet
    cloud = cloud_factory(sweep_seconds=300)
    assert cloud.api.request("GET", "/health").body["swept_at"] is None

    # When its clock passes the five minutes
    cloud.advance(300)

    # Then the scheduled sweep ran: its report is the health, found nothing, and is dated on the advanced clock
    def swept() -> dict[str, Any] | None:
        report = cloud.api.request("GET", "/health").body
        return dict(report) if report["swept_at"] else None

    report = cloud.until("the scheduled sweep's report", swept)
    assert report["summary"]["findings"] == 0
    assert seconds_between(report["swept_at"], cloud.clock()["now"]) < 300 <= cloud.clock()["advanced_seconds"]


def test_sweep_health_and_costs_through_the_cli(cloud_factory: Callable[..., RunningCloud]) -> None:
    # Given a finished job
    cloud = cloud_factory()
    job = cloud.wait_for(cloud.api.request("POST", "/jobs", JOB).body["job_id"], {"SUCCEEDED", "FAILED"})
    today = cloud.clock()["now"][:10]  # the local cloud's day
    # When an operator sweeps, reads health and asks what today cost
    swept = json.loads(cloud.cli("--json", "sweep").stdout)
    health = json.loads(cloud.cli("health", "--json").stdout)
    costs = json.loads(cloud.cli("--json", "costs", "--from", today, "--to", today).stdout)
    table = cloud.cli("costs", "--from", today, "--to", today)
    by_type = cloud.cli("costs", "--from", today, "--to", today, "--group-by", "gpu_type")
    swept_words, health_words = cloud.cli("sweep"), cloud.cli("health")
    # Then the sweep ran in the sweep function and its report is the health; the day's cost is the job's
    assert swept["status"] == "COMPLETE" and swept["sweep_id"].startswith("sweep-")
    assert health["sweep_id"] == swept["sweep_id"]
    assert costs["total_usd"] == pytest.approx(job["cost"]["usd"])
    assert costs["days"][0]["by_gpu_type"] == {job["instance_type"]: pytest.approx(job["cost"]["usd"])}
    assert costs["days"][0]["by_job_name"] == {"costed": pytest.approx(job["cost"]["usd"])}
    # And the table is by day unless another dimension is asked for, one dimension at a time
    assert table.returncode == 0 and table.stdout.splitlines()[0].split() == ["day", "attempts", "usd", "marginal"]
    assert today in table.stdout and job["instance_type"] not in table.stdout
    assert by_type.returncode == 0 and job["instance_type"] in by_type.stdout
    # And without --json, a sweep and the health read as words: the summary, then each finding as a short list
    for said in (swept_words, health_words):
        assert said.returncode == 0, said.stderr
        summary = [line for line in said.stdout.splitlines() if line.startswith("sweep sweep-") and " at " in line]
        assert len(summary) == 1 and "{" not in said.stdout, said.stdout
        assert "no findings" in summary[0] or " finding" in summary[0]


def test_a_cancelled_running_job_has_a_cost_and_every_attempt_is_in_the_costs(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a job of an hour cancelled after it ran for a minute (of the local cloud's clock)
    cloud = cloud_factory({"jobs": {"runtime_seconds": 3600}})
    running = cloud.api.request("POST", "/jobs", JOB | {"name": "cancelled"}).body["job_id"]
    cloud.wait_for(running, {"RUNNING"})
    cloud.advance(60)
    assert cloud.api.request("DELETE", f"/jobs/{running}").status == 202

    # When Batch has said the attempt ended / Then the attempt and the job carry what it cost: the minute it ran
    def priced() -> dict[str, Any] | None:
        job = cloud.api.request("GET", f"/jobs/{running}").body
        return dict(job) if job["attempts"][0].get("cost") else None

    job = cloud.until("the cancelled attempt's cost", priced)
    assert job["status"] == "CANCELLED"
    attempt = job["attempts"][0]
    assert attempt["cost"]["usd"] > 0 and 60 <= attempt["cost"]["runtime_seconds"] < 3600
    assert job["cost"]["usd"] == attempt["cost"]["usd"]
    # And /costs counts it, grouped by capacity type, and as CSV through the API and the CLI
    today = cloud.clock()["now"][:10]  # the local cloud's day
    query = {"from": today, "to": today, "group_by": "capacity_type"}
    report = cloud.api.request("GET", "/costs", query=query).body
    assert report["total_usd"] == attempt["cost"]["usd"]
    # (each group says the region its attempts ran in, when they share one: here the home region)
    # (on-demand: all of its cost was added to the bill)
    assert report["groups"] == [{"key": "on-demand", "usd": attempt["cost"]["usd"], "attempts": 1,
                                 "marginal_usd": attempt["cost"]["usd"], "region": "us-east-1"}]  # fmt: skip
    printed = cloud.cli("costs", "--csv", "--from", today, "--to", today)
    rows = printed.stdout.strip().splitlines()
    assert printed.returncode == 0 and rows[0].startswith("date,job_id,job_name,attempt,gpu_type")
    assert len(rows) == 2 and running in rows[1] and "cancelled" in rows[1]


def test_instances_that_never_registered_are_waste_next_to_the_job_costs(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given the T4's instances never join ECS, and a job that falls back from them after 3 seconds
    cloud = cloud_factory({"instance_types": {"g4dn.xlarge": {"ecs_agent": "never_registers"}}})
    job_id = cloud.api.request("POST", "/jobs", JOB | {"stuck_after_minutes": 0.05}).body["job_id"]
    job = cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"})
    assert job["status"] == "SUCCEEDED"
    # When the sweep finds (and terminates) the instance that never registered
    swept = json.loads(cloud.cli("--json", "sweep").stdout)
    assert any(f["kind"] == "ECS_AGENT_NOT_REGISTERED" for f in swept["findings"]), swept
    # Then /costs shows its cost as waste, by reason and pool, next to (not inside) the job costs
    today = cloud.clock()["now"][:10]  # the local cloud's day
    costs = cloud.api.request("GET", "/costs", query={"from": today, "to": today}).body
    waste = costs["waste"]
    # (the pool that ran the job may also show its instance idle before scale-in)
    assert waste["usd"] > 0 and waste["by_reason"]["never_registered"] > 0
    never = job["attempts"][0]["job_queue"]  # the pool of the attempt that fell back
    assert never.startswith("gpupilot-od-x8664-g4dn-xlarge-")
    assert waste["by_pool"][never] == waste["by_reason"]["never_registered"]
    assert costs["total_usd"] == job["cost"]["usd"]


def test_an_instance_whose_agent_disconnected_is_waste_once_under_that_reason(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given the g6.2xlarge's instances join ECS and then lose their agent, and a job only that type may serve
    cloud = cloud_factory({"instance_types": {"g6.2xlarge": {"ecs_agent": "disconnects"}}})
    job_id = cloud.api.request("POST", "/jobs", JOB | {"instance_types": ["g6.2xlarge"]}).body["job_id"]

    def sweep() -> list[dict[str, Any]]:
        swept = cloud.cli("--json", "sweep")
        assert swept.returncode == 0, swept.stderr
        return list(json.loads(swept.stdout)["findings"])

    # When sweeps run until one finds the disconnected agent, and then two more
    disconnected = cloud.until(
        "a sweep that finds the disconnected agent", lambda: [f for f in sweep() if f["kind"] == "AGENT_DISCONNECTED"]
    )
    later = sweep() + sweep()
    # Then the first deregistered and terminated its instance, and no later sweep took it for one never registered
    [finding] = disconnected
    assert "deregistered" in finding["action"] and "terminated" in finding["action"]
    assert not [
        f for f in later if f["kind"] == "ECS_AGENT_NOT_REGISTERED" and set(f["instances"]) & set(finding["instances"])
    ]
    # And its waste (and that of any instance Batch launched after it) is counted once, as a disconnected agent
    today = cloud.clock()["now"][:10]  # the local cloud's day
    waste = cloud.api.request("GET", "/costs", query={"from": today, "to": today}).body["waste"]
    assert set(waste["by_reason"]) == {"agent_disconnected"} and waste["usd"] > 0, waste
    assert cloud.api.request("DELETE", f"/jobs/{job_id}").status == 202


def test_the_unused_share_of_a_larger_instance_is_waste_and_jobs_plus_waste_are_what_the_instances_cost(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    import boto3

    # Given two 1-GPU jobs only a 4-GPU g4dn.12xlarge may run, and one on a 1-GPU type
    cloud = cloud_factory({"jobs": {"runtime_seconds": 3}})
    bodies = [
        JOB | {"name": "quarter-1", "instance_types": ["g4dn.12xlarge"]},
        JOB | {"name": "quarter-2", "instance_types": ["g4dn.12xlarge"]},
        JOB | {"name": "whole", "instance_types": ["g4dn.xlarge"]},
    ]
    job_ids = [cloud.api.request("POST", "/jobs", body).body["job_id"] for body in bodies]
    # When they have run
    jobs = [cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"}) for job_id in job_ids]
    assert [j["status"] for j in jobs] == ["SUCCEEDED"] * 3, jobs
    today = cloud.clock()["now"][:10]  # the local cloud's day
    costs = cloud.api.request("GET", "/costs", query={"from": today, "to": today}).body

    # Then each job on the larger instance pays a quarter of it, and what no job held of it is unused_share waste
    quarters = [j["cost"] for j in jobs[:2]]
    assert [c["gpu_share"] for c in quarters] == [0.25, 0.25] and jobs[2]["cost"]["gpu_share"] == 1.0
    assert set(costs["waste"]["by_reason"]) == {"unused_share"} and costs["waste"]["usd"] > 0, costs["waste"]
    # And the jobs' costs plus the waste are what the instances cost while they ran them, as AWS shows it: each
    # container instance's price over the time any of the jobs ran on it (Batch's attempts name it)
    aws = {"endpoint_url": cloud.aws_url, "region_name": "us-east-1", "aws_access_key_id": "local",
           "aws_secret_access_key": "local"}  # fmt: skip
    batch_ids = [j["attempts"][-1]["batch_job_id"] for j in jobs]
    described = boto3.client("batch", **aws).describe_jobs(jobs=batch_ids)["jobs"]
    hourly = {j["attempts"][-1]["batch_job_id"]: j["cost"]["hourly_usd"] for j in jobs}
    busy: dict[str, list[tuple[float, float]]] = {}
    price: dict[str, float] = {}
    for batch_job in described:
        host = batch_job["attempts"][-1]["container"]["containerInstanceArn"]
        busy.setdefault(host, []).append((batch_job["startedAt"] / 1000, batch_job["stoppedAt"] / 1000))
        price[host] = hourly[batch_job["jobId"]]
    assert len(busy) == 2  # the two quarters shared one g4dn.12xlarge
    instances_cost = sum(price[host] * _union_seconds(spans) / 3600 for host, spans in busy.items())
    assert costs["total_usd"] == pytest.approx(sum(j["cost"]["usd"] for j in jobs), abs=1e-12)
    assert costs["total_usd"] + costs["waste"]["usd"] == pytest.approx(instances_cost, abs=1e-9)
    # And the CLI's costs table names it
    assert "unused_share $" in cloud.cli("costs", "--from", today, "--to", today).stdout


def _union_seconds(spans: list[tuple[float, float]]) -> float:
    """Seconds covered by any of the spans."""
    total, reached = 0.0, float("-inf")
    for start, stop in sorted(spans):
        if stop > reached:
            total += stop - max(start, reached)
            reached = stop
    return total
