"""Why is my job still RUNNABLE? The simulated fleet's failures, diagnosed from what a real account shows,
through the HTTP API, the CLI and the local cloud's own EC2 and ECS endpoints."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest

from tests.e2e.conftest import RunningCloud

pytestmark = pytest.mark.e2e
JOB = {"name": "fleet", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"]}
FIRST = "g4dn.xlarge"
REMEDIATION = {
    "ECS_AGENT_NOT_REGISTERED": "terminated",
    "GPU_NOT_REGISTERED": "remembered",
    "AGENT_DISCONNECTED": "deregistered",
}


def aws(cloud: RunningCloud, service: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=cloud.aws_url,
        region_name="us-east-1",
        aws_access_key_id="local",
        aws_secret_access_key="local",
    )


@pytest.mark.parametrize(
    ("behaviour", "category", "evidence"),
    [
        ({"ecs_agent": "never_registers"}, "ECS_AGENT_NOT_REGISTERED", "instances_unregistered"),
        ({"gpu_registration": "missing"}, "GPU_NOT_REGISTERED", "instances_gpu_less"),
        ({"ecs_agent": "disconnects"}, "AGENT_DISCONNECTED", "instances_disconnected"),
    ],
)
def test_a_fleet_that_cannot_run_the_job_is_diagnosed_with_evidence_and_the_job_falls_back(
    cloud_factory: Callable[..., RunningCloud], behaviour: dict[str, str], category: str, evidence: str
) -> None:
    # Given the cheapest GPU type's instances launch but cannot take the job, and Batch gives no reason
    cloud = cloud_factory({"instance_types": {FIRST: behaviour}, "jobs": {"runtime_seconds": 1}})
    # When a job that may wait 3 seconds is submitted
    job_id = cloud.api.request("POST", "/jobs", JOB | {"stuck_after_minutes": 0.05}).body["job_id"]
    job = cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"})
    # Then the first attempt says why, naming the instances, and the job ran on the next type
    first, last = job["attempts"][0], job["attempts"][-1]
    assert job["status"] == "SUCCEEDED", job
    assert (first["instance_type"], first["diagnosis"]["category"]) == (FIRST, category)
    instances = first["diagnosis"]["evidence"][evidence]
    assert instances and all(i["instance_type"] == FIRST for i in instances)
    assert first["diagnosis"]["recommendation"]
    assert last["instance_type"] != FIRST and last["status"] == "SUCCEEDED"
    # And where Batch gives no reason, the first wait's timeline entry gives the diagnosis's
    runnable = [entry["reason"] or "" for entry in job["timeline"] if entry["status"] == "RUNNABLE"]
    assert runnable[0].startswith(f"{category}: "), job["timeline"]
    # And the instances named are there for anyone to see, with the tags GPU Pilot gave the pool
    ids = [i["instance_id"] for i in instances]
    described = aws(cloud, "ec2").describe_instances(InstanceIds=ids)
    tags = {t["Key"]: t["Value"] for r in described["Reservations"] for i in r["Instances"] for t in i["Tags"]}
    assert tags["gpupilot:pool"] == first["job_queue"]
    # And the next sweep reports the pool's broken instances and acts on them
    swept = cloud.cli("--json", "sweep")
    assert swept.returncode == 0, swept.stderr
    [finding] = [f for f in json.loads(swept.stdout)["findings"] if f["kind"] == category]
    assert finding["resource"] == first["job_queue"] and set(ids) <= set(finding["instances"])
    assert REMEDIATION[category] in finding["action"]
    states = aws(cloud, "ec2").describe_instances(InstanceIds=ids)["Reservations"][0]["Instances"]
    if category == "ECS_AGENT_NOT_REGISTERED":
        assert {i["State"]["Name"] for i in states} == {"terminated"}


@pytest.mark.parametrize(
    ("world", "category", "evidence"),
    [
        ({"instance_types": {FIRST: {"gpu_registration": "missing"}}}, "GPU_NOT_REGISTERED", "instances_gpu_less"),
        (
            {"instance_types": {FIRST: {"ecs_agent": "never_registers"}}},
            "ECS_AGENT_NOT_REGISTERED",
            "instances_unregistered",
        ),
        (
            {"quotas": {"L-DB2E81BA": 4}, "jobs": {"runtime_seconds": 120}},
            "VCPU_QUOTA_REACHED",
            "quota_holders",
        ),
    ],
)
def test_explain_diagnoses_a_waiting_job_now_and_the_cli_prints_it(
    cloud_factory: Callable[..., RunningCloud], world: dict[str, Any], category: str, evidence: str
) -> None:
    # Given a job that cannot start, with a long wait before the workflow diagnoses it
    cloud = cloud_factory(world)
    body = JOB | {"stuck_after_minutes": 30}
    blocker: dict[str, Any] = {}
    if category == "VCPU_QUOTA_REACHED":
        # A quota of one instance, taken by another job's: the next pool can launch nothing (the plan saw
        # room for one, and warned that parallel jobs would wait for each other)
        blocker_id = cloud.api.request("POST", "/jobs", JOB | {"instance_types": ["g4dn.xlarge"]}).body["job_id"]
        blocker = cloud.wait_for(blocker_id, {"RUNNING"})
        body |= {"instance_types": ["g5.xlarge"]}
        assert any("allows 1 g5.xlarge at once" in w for w in cloud.api.request("POST", "/plan", body).body["warnings"])
    job_id = cloud.api.request("POST", "/jobs", body).body["job_id"]

    # When the user asks why it waits (the fleet needs its launch or registration grace first)
    def explained() -> dict[str, Any] | None:
        found = cloud.api.request("GET", f"/jobs/{job_id}", query={"explain": "true"}).body.get("explanation")
        return dict(found) if found and found["category"] == category else None

    explanation = cloud.until(f"an explanation of {category}", explained, every=0.5)
    # Then the API answers with the diagnosis and its evidence, and so does the CLI
    assert explanation["category"] == category, explanation
    assert explanation["evidence"][evidence]
    printed = cloud.cli("status", "--explain", job_id)
    assert printed.returncode == 0, printed.stderr
    assert category in printed.stdout
    if category == "VCPU_QUOTA_REACHED":
        # The quota, what holds it (the other job's pool) and the command to raise it
        holder = f"1 g4dn.xlarge in pool {blocker['attempts'][0]['job_queue']} (4 vCPUs)"
        assert "L-DB2E81BA" in explanation["reason"] and holder in explanation["reason"]
        assert "request-service-quota-increase" in printed.stdout
    # And nothing was remedied by asking: the job still waits on its first attempt
    job = cloud.api.request("GET", f"/jobs/{job_id}").body
    assert job["status"] == "RUNNABLE" and len(job["attempts"]) == 1
    assert cloud.api.request("DELETE", f"/jobs/{job_id}").status == 202


def test_a_running_job_shows_what_the_simulated_fleet_gave_it(cloud_factory: Callable[..., RunningCloud]) -> None:
    # Given a healthy world with a job running long enough to look at
    cloud = cloud_factory({"jobs": {"runtime_seconds": 30}})
    job_id = cloud.api.request("POST", "/jobs", JOB).body["job_id"]
    cloud.wait_for(job_id, {"RUNNING"})
    # When the user lists the pool's ECS cluster / Then its GPU instance is registered with its GPU
    ecs = aws(cloud, "ecs")
    registered = [
        resource
        for cluster in ecs.list_clusters()["clusterArns"]
        for arns in [ecs.list_container_instances(cluster=cluster)["containerInstanceArns"]]
        if arns
        for instance in ecs.describe_container_instances(cluster=cluster, containerInstances=arns)["containerInstances"]
        for resource in instance["registeredResources"]
    ]
    assert any(r["name"] == "GPU" and len(r["stringSetValue"]) == 1 for r in registered)
    assert cloud.api.request("DELETE", f"/jobs/{job_id}").status == 202


def test_a_job_waiting_for_capacity_shows_batchs_reason_within_seconds(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given no capacity for the only GPU type a job accepts, and a long stuck_after
    cloud = cloud_factory({"instance_types": {FIRST: {"capacity": "none"}}})
    body = JOB | {"instance_types": [FIRST], "stuck_after_minutes": 30}
    job_id = cloud.api.request("POST", "/jobs", body).body["job_id"]

    # When the user looks at it / Then Batch's own words are there, before any diagnosis (the job waits 30 minutes)
    def with_batchs_reason() -> dict[str, Any] | None:
        job = cloud.api.request("GET", f"/jobs/{job_id}").body
        return dict(job) if (job.get("reason") or "").startswith("CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY") else None

    job = cloud.until("Batch's reason on the job", with_batchs_reason)
    assert job["status"] == "RUNNABLE" and job["attempts"][0]["diagnosis"] is None
    printed = cloud.cli("status", job_id)
    assert "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY" in printed.stdout
    assert cloud.api.request("DELETE", f"/jobs/{job_id}").status == 202


def test_spot_reclaims_fail_the_attempt_with_batchs_host_terminated_reason_after_batchs_retries(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given spot g4dn.xlarge instances reclaimed after 1 second, and a job that needs 30
    world = {"spot": {FIRST: {"interrupt_after_seconds": 1}}, "jobs": {"runtime_seconds": 30}}
    cloud = cloud_factory(world)
    body = JOB | {"instance_types": [FIRST], "capacity": "spot"}
    # When it runs / Then each of Batch's attempts loses its host, and the job fails saying so
    job = cloud.wait_for(cloud.api.request("POST", "/jobs", body).body["job_id"], {"SUCCEEDED", "FAILED"})
    [attempt] = job["attempts"]
    assert (job["status"], attempt["capacity"]) == ("FAILED", "spot"), job
    assert attempt["status_reason"].startswith("Host EC2 (instance i-") and "terminated" in attempt["status_reason"]


def test_a_pool_whose_instances_keep_failing_to_register_is_disabled_and_new_jobs_fall_back_from_it(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given the cheapest type's instances never join ECS, and a job patient enough to stay in that pool
    cloud = cloud_factory({"instance_types": {FIRST: {"ecs_agent": "never_registers"}}, "jobs": {"runtime_seconds": 1}})
    patient = cloud.api.request("POST", "/jobs", JOB | {"stuck_after_minutes": 30}).body["job_id"]

    # When sweep after sweep finds its instances unregistered (Batch launches new ones for the waiting job)
    def disabled_by_a_sweep() -> list[dict[str, Any]] | None:
        swept = cloud.cli("--json", "sweep")
        assert swept.returncode == 0, swept.stderr
        findings = json.loads(swept.stdout)["findings"]
        return list(findings) if any(f["kind"] == "POOL_DISABLED" for f in findings) else None

    findings = cloud.until("a sweep that disables the pool", disabled_by_a_sweep, every=0.5)
    # Then the pool's queue is DISABLED in Batch, and the sweep says what it did, why, and how to undo it
    [disabled] = [f for f in findings if f["kind"] == "POOL_DISABLED"]
    pool = disabled["resource"]
    [queue] = aws(cloud, "batch").describe_job_queues(jobQueues=[pool])["jobQueues"]
    assert queue["state"] == "DISABLED"
    [failing] = [f for f in findings if f["kind"] == "ECS_AGENT_NOT_REGISTERED"]
    assert f"disabled job queue {pool}" in failing["action"]
    assert "--state ENABLED" in disabled["recommendation"]
    # And the job already in it still waits there (a DISABLED queue keeps its jobs)
    assert cloud.api.request("GET", f"/jobs/{patient}").body["status"] == "RUNNABLE"
    # And once the offering memory has expired (30 minutes deployed), a new job for that type is not sent
    # into the disabled pool: its attempt says why, and the job runs on the next type
    forget_unavailable_offerings(cloud)
    job_id = cloud.api.request("POST", "/jobs", JOB).body["job_id"]
    job = cloud.wait_for(job_id, {"SUCCEEDED", "FAILED"})
    first, last = job["attempts"][0], job["attempts"][-1]
    assert (first["instance_type"], first["status"]) == (FIRST, "NOT_SUBMITTED")
    assert first["diagnosis"]["category"] == "POOL_DISABLED"
    assert job["status"] == "SUCCEEDED" and last["instance_type"] != FIRST
    assert cloud.api.request("DELETE", f"/jobs/{patient}").status == 202


def forget_unavailable_offerings(cloud: RunningCloud) -> None:
    """What DynamoDB's TTL does to the offering memory after 30 minutes."""
    from functions.shared import constants as c
    from functions.shared.adapters.table_store import OFFERINGS_PARTITION
    from gpupilot.localcloud.deploy import TABLE_NAME

    table = aws(cloud, "dynamodb")
    items = table.query(
        TableName=TABLE_NAME,
        KeyConditionExpression="#pk = :p",
        ExpressionAttributeNames={"#pk": c.TABLE_PK},
        ExpressionAttributeValues={":p": {"S": OFFERINGS_PARTITION}},
    )["Items"]
    for item in items:
        table.delete_item(TableName=TABLE_NAME, Key={c.TABLE_PK: item[c.TABLE_PK], c.TABLE_SK: item[c.TABLE_SK]})


def test_a_registration_finding_names_the_jobs_waiting_in_its_pool_and_what_its_instances_printed(
    cloud_factory: Callable[..., RunningCloud],
) -> None:
    # Given a job patient enough to wait in a pool whose instances never join ECS
    cloud = cloud_factory({"instance_types": {FIRST: {"ecs_agent": "never_registers"}}})
    job_id = cloud.api.request("POST", "/jobs", JOB | {"instance_types": [FIRST], "stuck_after_minutes": 30}).body[
        "job_id"
    ]

    # When sweeps run until the instance is past its registration grace
    def unregistered() -> list[dict[str, Any]]:
        swept = cloud.cli("--json", "sweep")
        assert swept.returncode == 0, swept.stderr
        return [f for f in json.loads(swept.stdout)["findings"] if f["kind"] == "ECS_AGENT_NOT_REGISTERED"]

    found = cloud.until("a sweep that finds the unregistered instance", unregistered, every=0.5)
    # Then the finding names the job it holds up, and quotes what the instance printed on its console
    [finding] = found
    assert finding["jobs"] == [job_id]
    [instance] = finding["instances"]
    printed = finding["evidence"]["console"][instance]
    assert printed["boot_check"].startswith("gpupilot-boot-check: PASS")  # its GPU answered: the agent is the cause
    assert any("Linux version" in line for line in printed["console_tail"])
    assert cloud.api.request("DELETE", f"/jobs/{job_id}").status == 202
