"""Pooled GPU compute environments and queues: names, specs, and create-or-reuse against a fake Batch."""

from __future__ import annotations

import re
from typing import Any

import pytest
from botocore.exceptions import ClientError

from functions.shared.config import Settings
from functions.shared.provisioning import (
    MAX_READY_CHECKS,
    BatchPools,
    ComputeEnvironmentInvalid,
    Pool,
    QueueNotReady,
    compute_environment_spec,
    ec2_configuration,
    pool_for,
)
from tests.unit.builders import candidate

BATCH_NAME = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
SETTINGS = Settings(
    table_name="gpupilot",
    subnets=["subnet-a", "subnet-b"],
    security_groups=["sg-1"],
    instance_profile_arn="arn:aws:iam::123456789012:instance-profile/gpu",
    max_vcpus=64,
)
POOL = pool_for(candidate("g5.xlarge"), "x86_64", "gpupilot")


def already_exists(operation: str) -> ClientError:
    return ClientError({"Error": {"Code": "ClientException", "Message": "Object already exists"}}, operation)


# -- names -------------------------------------------------------------------------------------
def test_pool_name_is_deterministic_for_the_same_candidate():
    # Given two workflows choosing the same candidate
    # When each derives its pool
    first = pool_for(candidate("g5.xlarge"), "x86_64", "gpupilot")
    second = pool_for(candidate("g5.xlarge"), "x86_64", "gpupilot")

    # Then both get the same pool, which is what makes pools reusable
    assert first == second
    assert first.name == "gpupilot-od-x8664-g5-xlarge"


@pytest.mark.parametrize("instance_type", ["g5.xlarge", "p6-b200.48xlarge", "g4dn.metal"])
def test_pool_name_uses_only_characters_batch_allows(instance_type):
    # Given / When
    pool = pool_for(candidate(instance_type), "x86_64", "gpupilot")

    # Then
    assert BATCH_NAME.match(pool.name), pool.name


def test_pool_names_differ_by_capacity_arch_and_type():
    # Given / When: pools varying one thing at a time
    names = {
        pool_for(candidate("g5.xlarge", capacity="on-demand"), "x86_64", "gpupilot").name,
        pool_for(candidate("g5.xlarge", capacity="spot"), "x86_64", "gpupilot").name,
        pool_for(candidate("g5.xlarge"), "arm64", "gpupilot").name,
        pool_for(candidate("g6.xlarge"), "x86_64", "gpupilot").name,
    }

    # Then each has its own name
    assert len(names) == 4


def test_pool_holds_the_candidates_type_capacity_and_arch():
    # Given / When
    pool = pool_for(candidate("g5g.xlarge", capacity="spot"), "arm64", "gpupilot")

    # Then
    assert (pool.instance_types, pool.capacity, pool.arch) == (["g5g.xlarge"], "spot", "arm64")


# -- compute environment spec ---------------------------------------------------------------------
def test_compute_environment_is_managed_scales_to_zero_and_uses_the_nvidia_ami():
    # Given / When
    ce = compute_environment_spec(POOL, SETTINGS)

    # Then
    resources = ce["computeResources"]
    assert (ce["computeEnvironmentName"], ce["type"], ce["state"]) == (POOL.name, "MANAGED", "ENABLED")
    assert (resources["minvCpus"], resources["desiredvCpus"], resources["maxvCpus"]) == (0, 0, 64)
    assert resources["ec2Configuration"] == [{"imageType": "ECS_AL2023_NVIDIA"}]
    assert resources["instanceTypes"] == ["g5.xlarge"]
    assert (resources["subnets"], resources["securityGroupIds"]) == (["subnet-a", "subnet-b"], ["sg-1"])
    assert resources["instanceRole"] == SETTINGS.instance_profile_arn


def test_on_demand_pool_uses_ec2_best_fit_progressive():
    # Given / When
    resources = compute_environment_spec(POOL, SETTINGS)["computeResources"]

    # Then
    assert (resources["type"], resources["allocationStrategy"]) == ("EC2", "BEST_FIT_PROGRESSIVE")


def test_spot_pool_uses_spot_price_capacity_optimized():
    # Given a spot pool
    spot_pool = pool_for(candidate("g5.xlarge", capacity="spot"), "x86_64", "gpupilot")

    # When
    resources = compute_environment_spec(spot_pool, SETTINGS)["computeResources"]

    # Then
    assert (resources["type"], resources["allocationStrategy"]) == ("SPOT", "SPOT_PRICE_CAPACITY_OPTIMIZED")


def test_launch_template_is_used_only_when_configured():
    # Given settings with and without a launch template
    configured = SETTINGS.model_copy(update={"launch_template_name": "gpupilot-gpu"})

    # When / Then
    assert compute_environment_spec(POOL, configured)["computeResources"]["launchTemplate"] == {
        "launchTemplateName": "gpupilot-gpu",
        "version": "$Latest",
    }
    assert "launchTemplate" not in compute_environment_spec(POOL, SETTINGS)["computeResources"]


def test_service_role_is_set_only_when_configured():
    # Given settings with and without a Batch service role
    role = "arn:aws:iam::123456789012:role/batch"
    configured = SETTINGS.model_copy(update={"batch_service_role_arn": role})

    # When / Then: without it, Batch uses its service-linked role
    assert compute_environment_spec(POOL, configured)["serviceRole"] == role
    assert "serviceRole" not in compute_environment_spec(POOL, SETTINGS)


# -- BatchPools.ensure against a fake Batch ----------------------------------------------------------
class FakeBatch:
    """Plain in-memory Batch: compute environments and queues by name, and every call recorded."""

    def __init__(self, create_error: ClientError | None = None, created_status: str = "VALID") -> None:
        self.environments: dict[str, dict[str, Any]] = {}
        self.queues: dict[str, dict[str, Any]] = {}
        self.calls: list[str] = []
        self.create_error = create_error
        self.created_status = created_status
        self.created_queue_with: dict[str, Any] | None = None

    def add_environment(self, name: str, status: str = "VALID", reason: str | None = None) -> None:
        self.environments[name] = {
            "computeEnvironmentName": name,
            "computeEnvironmentArn": f"arn:aws:batch:us-east-1:123456789012:compute-environment/{name}",
            "status": status,
            "statusReason": reason,
        }

    def add_queue(self, name: str, status: str = "VALID") -> None:
        self.queues[name] = {"jobQueueName": name, "status": status}

    def describe_compute_environments(self, computeEnvironments: list[str]) -> dict[str, Any]:
        self.calls.append("describe_compute_environments")
        return {"computeEnvironments": [self.environments[n] for n in computeEnvironments if n in self.environments]}

    def create_compute_environment(self, **spec: Any) -> dict[str, Any]:
        self.calls.append("create_compute_environment")
        if self.create_error is not None:
            # The other workflow won the race: its environment exists now.
            self.add_environment(spec["computeEnvironmentName"])
            raise self.create_error
        self.add_environment(spec["computeEnvironmentName"], status=self.created_status)
        return {}

    def describe_job_queues(self, jobQueues: list[str]) -> dict[str, Any]:
        self.calls.append("describe_job_queues")
        return {"jobQueues": [self.queues[n] for n in jobQueues if n in self.queues]}

    def create_job_queue(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append("create_job_queue")
        self.created_queue_with = kwargs
        self.add_queue(kwargs["jobQueueName"])
        return {}


def test_existing_valid_pool_is_reused_without_creating_anything():
    # Given a VALID compute environment and queue for the pool
    batch = FakeBatch()
    batch.add_environment(POOL.name)
    batch.add_queue(POOL.name)

    # When ensuring the pool
    status = BatchPools(batch, SETTINGS).ensure(POOL)

    # Then nothing is created and the queue is ready
    assert "create_compute_environment" not in batch.calls
    assert "create_job_queue" not in batch.calls
    assert (status.job_queue, status.ready, status.checks, status.status) == (POOL.name, True, 1, "VALID/VALID")


def test_missing_pool_is_created_with_its_queue_pointing_at_the_environment():
    # Given an empty Batch
    batch = FakeBatch()

    # When ensuring the pool
    status = BatchPools(batch, SETTINGS).ensure(POOL)

    # Then both are created, the queue ordered onto the new environment
    assert batch.calls.count("create_compute_environment") == 1
    assert batch.calls.count("create_job_queue") == 1
    assert batch.created_queue_with is not None
    assert batch.created_queue_with["computeEnvironmentOrder"] == [
        {"order": 1, "computeEnvironment": batch.environments[POOL.name]["computeEnvironmentArn"]}
    ]
    assert status.ready is True


def test_invalid_compute_environment_raises_with_its_status_reason():
    # Given an INVALID compute environment
    batch = FakeBatch()
    batch.add_environment(POOL.name, status="INVALID", reason="CLIENT_ERROR - subnet-a does not exist")

    # When / Then
    with pytest.raises(ComputeEnvironmentInvalid, match="CLIENT_ERROR - subnet-a does not exist"):
        BatchPools(batch, SETTINGS).ensure(POOL)


def test_pool_still_being_created_is_not_ready_and_counts_the_check():
    # Given a compute environment that Batch is still creating
    batch = FakeBatch(created_status="CREATING")

    # When ensuring the pool on its fourth check
    status = BatchPools(batch, SETTINGS).ensure(POOL, checks=3)

    # Then it is not ready, the check is counted, and the status says which part is waiting
    assert (status.ready, status.checks, status.status) == (False, 4, "CREATING/VALID")


def test_pool_not_ready_after_the_last_allowed_check_raises_queue_not_ready():
    # Given a compute environment stuck in CREATING
    batch = FakeBatch()
    batch.add_environment(POOL.name, status="CREATING")
    batch.add_queue(POOL.name)

    # When ensuring it for the last allowed time
    # Then the bounded wait ends
    with pytest.raises(QueueNotReady, match=f"after {MAX_READY_CHECKS} checks"):
        BatchPools(batch, SETTINGS).ensure(POOL, checks=MAX_READY_CHECKS - 1)


def test_pool_not_ready_before_the_last_check_does_not_raise():
    # Given the same stuck environment
    batch = FakeBatch()
    batch.add_environment(POOL.name, status="CREATING")
    batch.add_queue(POOL.name)

    # When ensuring it one check before the limit
    status = BatchPools(batch, SETTINGS).ensure(POOL, checks=MAX_READY_CHECKS - 2)

    # Then the workflow may check again
    assert (status.ready, status.checks) == (False, MAX_READY_CHECKS - 1)


def test_create_that_lost_a_race_reuses_the_winners_environment():
    # Given a create that fails because another workflow just created the same pool
    batch = FakeBatch(create_error=already_exists("CreateComputeEnvironment"))

    # When ensuring the pool
    status = BatchPools(batch, SETTINGS).ensure(POOL)

    # Then the error is swallowed and the winner's environment is used
    assert batch.calls.count("create_compute_environment") == 1
    assert status.compute_environment == POOL.name
    assert status.ready is True


def test_create_failing_for_another_reason_is_raised():
    # Given a create refused for a reason other than 'already exists'
    denied = ClientError({"Error": {"Code": "ClientException", "Message": "subnet-a is invalid"}}, "Create")
    batch = FakeBatch(create_error=denied)

    # When / Then
    with pytest.raises(ClientError, match="subnet-a is invalid"):
        BatchPools(batch, SETTINGS).ensure(POOL)


def test_pool_model_round_trips_through_the_workflow_payload():
    # Given / When / Then: the pool is plain data the state machine carries
    assert Pool.model_validate(POOL.model_dump()) == POOL


def test_gpu_pools_use_batchs_al2023_nvidia_ami():
    assert ec2_configuration(POOL, SETTINGS) == [{"imageType": "ECS_AL2023_NVIDIA"}]


def test_graviton_pools_use_the_configured_nvidia_ami():
    settings = SETTINGS.model_copy(update={"arm64_gpu_ami_id": "ami-0123456789abcdef0"})
    pool = pool_for(candidate("g5g.xlarge"), "arm64", "gpupilot")
    assert ec2_configuration(pool, settings) == [
        {"imageType": "ECS_AL2023", "imageIdOverride": "ami-0123456789abcdef0"}
    ]
