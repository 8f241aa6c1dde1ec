"""Fair-share job queues on moto, adapted as the local cloud adapts it (adaptation 28): a queue keeps its scheduling
policy, SubmitJob is refused without a shareIdentifier in a fair-share queue and with one in a FIFO queue, as AWS
refuses them, and the fleet simulator starts a fair-share queue's jobs by share, not first in, first out."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from functions.shared.domain.pools.queues import job_queue_spec
from functions.shared.domain.pools.specs import Pool
from functions.shared.domain.teams.config import TeamsConfig
from functions.shared.domain.teams.shares import fairshare_policy, scheduling_policy_name
from gpupilot.localcloud.moto_adaptations import ComputeEnvironmentLifecycle, adapted_moto
from tests.integration import test_fleet_simulator, test_moto_adaptations
from tests.integration.test_fleet_simulator import POOL, Fleet
from tests.integration.test_moto_adaptations import REGION, create_environment

# The fixtures of the moto adaptations' and the fleet simulator's tests: an empty account, a pool under a simulator.
aws = test_moto_adaptations.aws
fleet_in = test_fleet_simulator.fleet_in

TEAMS = TeamsConfig.model_validate({"teams": {"heavy": {"weight": 3}, "light": {"weight": 1}}})
POLICY = scheduling_policy_name("gpupilot")


def fair_queue(batch: Any, environment_arn: str, name: str = "fair") -> str:
    """A queue made as ensure_queue makes a pool's when the deployment's teams share by weight."""
    batch.create_scheduling_policy(name=POLICY, fairsharePolicy=fairshare_policy(TEAMS))
    pool = Pool(name=name, instance_types=["g4dn.xlarge"], capacity="on-demand", arch="x86_64")
    batch.create_job_queue(**job_queue_spec(pool, environment_arn, POLICY))
    return name


def a_definition(batch: Any) -> str:
    return str(batch.register_job_definition(
        jobDefinitionName="d", type="container", containerProperties={"image": "i", "vcpus": 1, "memory": 512}
    )["jobDefinitionArn"])  # fmt: skip


def test_moto_alone_takes_any_job_into_a_fair_share_queue_and_drops_its_share(aws) -> None:
    # Given moto alone, and a queue made with the deployment's policy
    batch = boto3.client("batch", region_name=REGION)
    queue = fair_queue(batch, create_environment(aws, service_role=aws["role"]))
    definition = a_definition(batch)
    # When a job without a share identifier, and one with it, are submitted
    without = batch.submit_job(jobName="j", jobQueue=queue, jobDefinition=definition)["jobId"]
    shared = batch.submit_job(jobName="k", jobQueue=queue, jobDefinition=definition, shareIdentifier="heavy")["jobId"]
    # Then moto takes both, and forgets the share (why adaptation 28 exists)
    assert {"shareIdentifier" in j for j in batch.describe_jobs(jobs=[without, shared])["jobs"]} == {False}


def test_adapted_a_fair_share_queue_keeps_its_policy_and_takes_a_job_only_under_a_share(aws) -> None:
    submitted: list[Any] = []
    batch = boto3.client("batch", region_name=REGION)
    with adapted_moto(on_job_submitted=submitted.append, lifecycle=ComputeEnvironmentLifecycle(create_seconds=0)):
        # Given a pool's queue created with the deployment's policy
        queue = fair_queue(batch, create_environment(aws))
        definition = a_definition(batch)
        [described] = batch.describe_job_queues(jobQueues=[queue])["jobQueues"]
        [policy] = batch.describe_scheduling_policies(arns=[described["schedulingPolicyArn"]])["schedulingPolicies"]
        # When a job is submitted without a share identifier / Then it is refused as AWS refuses it
        with pytest.raises(ClientError) as refused:
            batch.submit_job(jobName="j", jobQueue=queue, jobDefinition=definition)
        # And one under its team's share is taken, and described with it
        job_id = batch.submit_job(jobName="k", jobQueue=queue, jobDefinition=definition, shareIdentifier="heavy")[
            "jobId"
        ]
        [job] = batch.describe_jobs(jobs=[job_id])["jobs"]
    assert described["schedulingPolicyArn"] == f"arn:aws:batch:{REGION}:123456789012:scheduling-policy/{POLICY}"
    assert {s["shareIdentifier"]: s["weightFactor"] for s in policy["fairsharePolicy"]["shareDistribution"]} == {
        "heavy": 0.3333, "light": 1.0}  # fmt: skip
    assert refused.value.response["Error"]["Code"] == "ClientException"
    assert "shareIdentifier" in refused.value.response["Error"]["Message"]
    assert job["shareIdentifier"] == "heavy" and [j.job_name for j in submitted] == ["k"]


def test_adapted_a_fifo_queue_refuses_a_share_and_a_queue_needs_a_policy_that_exists(aws) -> None:
    batch = boto3.client("batch", region_name=REGION)
    with adapted_moto(on_job_submitted=lambda job: None, lifecycle=ComputeEnvironmentLifecycle(create_seconds=0)):
        # Given a FIFO pool's queue (a deployment without teams)
        environment = create_environment(aws)
        pool = Pool(name="fifo", instance_types=["g4dn.xlarge"], capacity="on-demand", arch="x86_64")
        batch.create_job_queue(**job_queue_spec(pool, environment))
        definition = a_definition(batch)
        # When a job is submitted to it with a share identifier / Then it is refused; without one it is taken
        with pytest.raises(ClientError) as refused:
            batch.submit_job(jobName="j", jobQueue="fifo", jobDefinition=definition, shareIdentifier="heavy")
        assert batch.submit_job(jobName="j", jobQueue="fifo", jobDefinition=definition)["jobId"]
        # And a queue naming a policy the region does not have is refused
        other = Pool(name="orphan", instance_types=["g4dn.xlarge"], capacity="on-demand", arch="x86_64")
        with pytest.raises(ClientError) as unknown:
            batch.create_job_queue(**job_queue_spec(other, environment, "nowhere"))
    assert [r.value.response["Error"]["Code"] for r in (refused, unknown)] == ["ClientException"] * 2
    assert (
        "FIFO" in refused.value.response["Error"]["Message"] or "first in" in refused.value.response["Error"]["Message"]
    )
    assert batch.describe_job_queues(jobQueues=["fifo"])["jobQueues"][0].get("schedulingPolicyArn") is None


def test_the_simulator_starts_a_fair_share_queues_jobs_by_weight_not_first_in_first_out(fleet_in) -> None:
    # Given a pool of four g4dn.xlarge at most (the account's quota), its queue sharing by weight 3 to 1
    fleet: Fleet = fleet_in({"quotas": {"L-DB2E81BA": 16}, "jobs": {"runtime_seconds": 3600}})
    environment = fleet.batch.describe_compute_environments(computeEnvironments=[POOL])["computeEnvironments"][0]
    queue = fair_queue(fleet.batch, environment["computeEnvironmentArn"], name="gpupilot-fair")
    definition = fleet.batch.register_job_definition(
        jobDefinitionName="gpupilot-train", type="container", containerProperties={"image": "nvidia/cuda",
        "resourceRequirements": [{"type": "GPU", "value": "1"}, {"type": "VCPU", "value": "4"},
                                 {"type": "MEMORY", "value": "8192"}]},
    )["jobDefinitionArn"]  # fmt: skip
    # And six jobs of the lighter team, then six of the heavier, waiting
    shares = {}
    for share in ["light"] * 6 + ["heavy"] * 6:
        job_id = fleet.batch.submit_job(jobName=share, jobQueue=queue, jobDefinition=definition, shareIdentifier=share)
        shares[job_id["jobId"]] = share
    fleet.t0 = fleet.clock.monotonic()
    # When the pool's instances boot and register
    for step in range(1, 300):
        fleet.at(step * 0.1)
        started = [j for j in shares if fleet.job(j)["status"] in ("STARTING", "RUNNING")]
        if len(started) >= 4:
            break
    # Then its four slots went three to the heavier team, one to the lighter (older, not starved)
    assert sorted(shares[j] for j in started) == ["heavy", "heavy", "heavy", "light"]
