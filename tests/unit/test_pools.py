"""Pooled GPU compute environments and queues: names and specs (create-or-reuse: tests/unit/usecases)."""

from __future__ import annotations

import re

import pytest

from functions.shared.domain.core.settings import Settings
from functions.shared.domain.core.vocabulary import Arch
from functions.shared.domain.fleet.batch import ComputeEnvironmentState, JobQueueState
from functions.shared.domain.pools.queues import job_queue_spec
from functions.shared.domain.pools.specs import (
    Pool,
    compute_environment_spec,
    ec2_configuration,
    generation_name,
    generation_of,
    pool_for,
    pool_generation,
    spec_version,
    versioned_pool,
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
POOL = pool_for(candidate("g5.xlarge"), Arch.X86_64, "gpupilot")


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


def test_pool_model_round_trips_through_the_workflow_payload():
    # Given / When / Then: the pool is plain data the state machine carries
    assert Pool.model_validate(POOL.model_dump()) == POOL


def test_gpu_pools_use_batchs_al2023_nvidia_ami():
    assert ec2_configuration(POOL, SETTINGS) == [{"imageType": "ECS_AL2023_NVIDIA"}]


def test_graviton_pools_use_the_configured_nvidia_ami():
    settings = SETTINGS.model_copy(update={"arm64_gpu_ami_id": "ami-0123456789abcdef0"})
    pool = pool_for(candidate("g5g.xlarge"), Arch.ARM64, "gpupilot")
    assert ec2_configuration(pool, settings) == [
        {"imageType": "ECS_AL2023", "imageIdOverride": "ami-0123456789abcdef0"}
    ]


def test_a_pools_queue_orders_only_its_own_compute_environment():
    # Given / When
    spec = job_queue_spec(POOL, "arn:aws:batch:us-east-1:123456789012:compute-environment/" + POOL.name)

    # Then
    assert spec["jobQueueName"] == POOL.name
    assert spec["computeEnvironmentOrder"] == [
        {"order": 1, "computeEnvironment": "arn:aws:batch:us-east-1:123456789012:compute-environment/" + POOL.name}
    ]


def test_instances_carry_the_pool_tag_so_diagnosis_can_find_them():
    # Given / When / Then: Batch propagates computeResources.tags to the instances it launches
    assert compute_environment_spec(POOL, SETTINGS)["computeResources"]["tags"] == {"gpupilot:pool": POOL.name}


def test_queues_carry_batchs_own_runnable_time_limits_within_what_batch_accepts():
    # Given / When
    spec = job_queue_spec(POOL, "arn:aws:batch:us-east-1:123456789012:compute-environment/" + POOL.name)
    # Then every reason Batch supports cancels a job RUNNABLE for a day, the longest Batch allows
    actions = spec["jobStateTimeLimitActions"]
    assert {a["reason"] for a in actions} == {
        "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
        "MISCONFIGURATION:COMPUTE_ENVIRONMENT_MAX_RESOURCE",
        "MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT",
    }
    assert all(a["state"] == "RUNNABLE" and a["action"] == "CANCEL" for a in actions)
    assert all(600 <= a["maxTimeSeconds"] <= 86400 for a in actions)


# -- spec versions and retirement steps ---------------------------------------------------------------------
def test_a_pool_s_version_is_its_spec_s_not_its_name_s_nor_the_order_of_its_lists():
    from functions.shared.domain.pools.specs import spec_version, versioned_pool

    configured = SETTINGS.model_copy(update={"launch_template_name": "gpupilot-gpu"})
    pool, spec = versioned_pool(POOL, configured, ["subnet-b", "subnet-a"], 3)
    again, _ = versioned_pool(POOL, configured, ["subnet-a", "subnet-b"], 3)
    assert pool.name == again.name == f"{POOL.name}-{pool.version}" and pool.key == POOL.name
    assert spec_version(spec) == pool.version
    assert spec["tags"] | spec["computeResources"]["tags"] == {
        "gpupilot:pool": pool.name, "gpupilot:capacity": "on-demand", "gpupilot:pool-key": POOL.name,
        "gpupilot:spec": pool.version,
    }  # fmt: skip
    # What Batch would build differently is another version
    assert versioned_pool(POOL, configured, ["subnet-a", "subnet-b"], 4)[0].version != pool.version
    assert versioned_pool(POOL, configured, ["subnet-a"], 3)[0].version != pool.version
    ami = configured.model_copy(update={"max_vcpus": 512})
    assert versioned_pool(POOL, ami, ["subnet-a", "subnet-b"], 3)[0].version != pool.version


def test_a_pool_is_taken_down_in_batch_s_order():
    from functions.shared.domain.fleet.batch import ComputeEnvironmentState, JobQueueState
    from functions.shared.domain.pools.retirement import RetireStep, retirement_step

    def queue(state: str, status: str = "VALID") -> JobQueueState:
        return JobQueueState(name="p", state=state, status=status)

    def environment(state: str, status: str = "VALID") -> ComputeEnvironmentState:
        return ComputeEnvironmentState(name="p", state=state, status=status)

    assert retirement_step(queue("ENABLED"), environment("ENABLED")) == RetireStep.DISABLE_QUEUE
    assert retirement_step(queue("DISABLED", "UPDATING"), environment("ENABLED")) == RetireStep.WAIT
    assert retirement_step(queue("DISABLED"), environment("ENABLED")) == RetireStep.DELETE_QUEUE
    assert retirement_step(queue("DISABLED", "DELETING"), environment("ENABLED")) == RetireStep.WAIT
    assert retirement_step(queue("DISABLED", "DELETED"), environment("ENABLED")) == RetireStep.DISABLE_ENVIRONMENT
    assert retirement_step(None, environment("ENABLED", "INVALID")) == RetireStep.DISABLE_ENVIRONMENT
    assert retirement_step(None, environment("DISABLED", "UPDATING")) == RetireStep.WAIT
    assert retirement_step(None, environment("DISABLED")) == RetireStep.DELETE_ENVIRONMENT
    assert retirement_step(None, environment("DISABLED", "DELETING")) == RetireStep.WAIT
    assert retirement_step(None, None) == RetireStep.DONE


# -- generations: a pool Batch is still deleting keeps its name, so the next one takes another ----------------
def test_a_pool_s_first_generation_has_its_plain_name_and_later_ones_a_numbered_suffix():
    base = "gpupilot-od-x8664-g5-xlarge-1a2b3c4d"
    assert [generation_name(base, n) for n in (1, 2, 10)] == [base, f"{base}-g2", f"{base}-g10"]
    assert [generation_of(base, generation_name(base, n)) for n in (1, 2, 10)] == [1, 2, 10]


@pytest.mark.parametrize("suffix", ["-g", "-g1", "-g02", "-gx", "-2", "x"])
def test_a_name_that_only_looks_like_a_generation_of_the_pool_is_none(suffix):
    base = "gpupilot-od-x8664-g5-xlarge-1a2b3c4d"
    assert generation_of(base, base + suffix) is None
    assert generation_of(base, "gpupilot-od-x8664-g6-xlarge-1a2b3c4d") is None


def test_a_generation_keeps_the_pool_s_spec_version_and_key_and_is_named_and_tagged_as_itself():
    first, first_spec = versioned_pool(POOL, SETTINGS)
    third, third_spec = versioned_pool(POOL, SETTINGS, generation=3)
    assert third.name == f"{first.name}-g3" and BATCH_NAME.match(third.name)
    assert (third.key, third.version) == (first.key, first.version)
    assert third_spec["computeEnvironmentName"] == third.name
    assert third_spec["tags"]["gpupilot:pool"] == third_spec["computeResources"]["tags"]["gpupilot:pool"] == third.name
    assert spec_version(third_spec) == spec_version(first_spec) == first.version


def ce(name: str, status: str) -> ComputeEnvironmentState:
    return ComputeEnvironmentState(name=name, status=status)


def test_the_pool_to_use_is_its_newest_live_generation_and_a_new_one_is_numbered_past_every_one_batch_shows():
    base = "gpupilot-od-x8664-g5-xlarge-1a2b3c4d"
    # Nothing shown: the first generation, to create
    assert pool_generation(base, [], []) == (None, 1)
    # Generation 1 VALID, 2 DELETING: generation 1 is the pool; a new one would be 3
    live, number = pool_generation(base, [ce(base, "VALID"), ce(f"{base}-g2", "DELETING")], [])
    assert (live.number if live else None, number) == (1, 3)
    # Generation 1 VALID but its queue DELETED, 2 CREATING: generation 2
    queue = JobQueueState(name=base, status="DELETED")
    live, number = pool_generation(base, [ce(base, "VALID"), ce(f"{base}-g2", "CREATING")], [queue])
    assert (live.number if live else None, number) == (2, 3)
    # Only a queue left of generation 4 (its compute environment gone): nothing live, a new one is 5
    assert pool_generation(base, [], [JobQueueState(name=f"{base}-g4", status="DELETING")]) == (None, 5)
