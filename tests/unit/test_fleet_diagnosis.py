"""What Batch does not say: diagnoses from a pool's EC2 instances and ECS container instances, built from
the shapes DescribeInstances and DescribeContainerInstances return."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from functions.shared.domain.capacity.quotas import QuotaHolder, QuotaState
from functions.shared.domain.core.vocabulary import DiagnosisCategory
from functions.shared.domain.diagnosis.runnable import StuckJobSnapshot, diagnose
from functions.shared.domain.fleet.batch import (
    BatchJobState,
    ComputeEnvironmentState,
    ContainerInstanceState,
    Ec2InstanceState,
    FleetState,
)

Category = DiagnosisCategory
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
CLUSTER = "arn:aws:ecs:us-east-1:123456789012:cluster/gpupilot-od-x8664-g5-xlarge_Batch_1b2c"


def ec2(
    instance_id: str, minutes_ago: float, state: str = "running", instance_type: str = "g5.xlarge"
) -> dict[str, Any]:
    """One DescribeInstances entry, as boto3 returns it."""
    return {
        "InstanceId": instance_id,
        "InstanceType": instance_type,
        "State": {"Code": 16, "Name": state},
        "LaunchTime": NOW - timedelta(minutes=minutes_ago),
        "Placement": {"AvailabilityZone": "us-east-1a"},
        "Tags": [{"Key": "gpupilot:pool", "Value": "gpupilot-od-x8664-g5-xlarge"}],
    }


def ecs(instance_id: str, gpus: int = 1, connected: bool = True) -> dict[str, Any]:
    """One DescribeContainerInstances entry, as boto3 returns it."""
    resources: list[dict[str, Any]] = [
        {"name": "CPU", "type": "INTEGER", "integerValue": 4096},
        {"name": "MEMORY", "type": "INTEGER", "integerValue": 15731},
        {"name": "PORTS", "type": "STRINGSET", "stringSetValue": ["22", "2375", "2376", "51678", "51679"]},
    ]
    if gpus:
        resources.append({"name": "GPU", "type": "STRINGSET", "stringSetValue": [f"GPU-{i}" for i in range(gpus)]})
    return {
        "containerInstanceArn": f"arn:aws:ecs:us-east-1:123456789012:container-instance/gpu/{instance_id}",
        "ec2InstanceId": instance_id,
        "status": "ACTIVE",
        "agentConnected": connected,
        "registeredResources": resources,
        "registeredAt": NOW - timedelta(minutes=5),
    }


def snapshot(
    instances: list[dict[str, Any]] = (),  # type: ignore[assignment]
    containers: list[dict[str, Any]] = (),  # type: ignore[assignment]
    runnable_minutes: float = 20,
    quota: float | None = None,
    max_vcpus: int = 256,
    reason: str | None = None,
) -> StuckJobSnapshot:
    job = BatchJobState.from_batch(
        {"jobId": "job-1", "status": "RUNNABLE", "statusReason": reason,
         "createdAt": (NOW - timedelta(minutes=runnable_minutes)).timestamp() * 1000}
    )  # fmt: skip
    environment = ComputeEnvironmentState.from_batch(
        {
            "computeEnvironmentName": "gpupilot-od-x8664-g5-xlarge",
            "status": "VALID",
            "ecsClusterArn": CLUSTER,
            "computeResources": {"type": "EC2", "maxvCpus": max_vcpus, "instanceTypes": ["g5.xlarge"]},
        }
    )
    fleet = FleetState(
        instances=[Ec2InstanceState.from_ec2(i) for i in instances],
        container_instances=[ContainerInstanceState.from_ecs(c) for c in containers],
    )
    return StuckJobSnapshot(
        job=job,
        environment=environment,
        at=NOW.isoformat(),
        fleet=fleet,
        instance_vcpus={"g5.xlarge": 4, "g5.12xlarge": 48},
        quota=QuotaState(code="L-DB2E81BA", name="Running On-Demand G and VT instances", vcpus=quota)
        if quota is not None
        else None,
    )


def test_instances_running_past_the_grace_without_registering_are_an_ecs_agent_failure():
    # Given two instances running 12 and 15 minutes that never joined the cluster
    result = diagnose(snapshot([ec2("i-aaa", 12), ec2("i-bbb", 15)]))

    # Then the diagnosis names them, their ages, and the likely causes (the user-data deadlock first)
    assert result.category == Category.ECS_AGENT_NOT_REGISTERED
    assert "2 instances running but never registered with ECS (oldest 900 s)" in result.reason
    assert [i["instance_id"] for i in result.evidence["instances_unregistered"]] == ["i-aaa", "i-bbb"]
    assert result.evidence["instances_unregistered"][1]["age_seconds"] == 900
    assert "cloud-init deadlock" in result.recommendation and "ECS endpoint" in result.recommendation


def test_an_ecs_agent_failure_says_what_the_instances_printed_on_their_console():
    # Given an instance that never joined the cluster, and its console output (ec2 GetConsoleOutput)
    stuck = snapshot([ec2("i-aaa", 15)]).model_copy(
        update={"consoles": {"i-aaa": "[ 0.0] Linux version 6.1\n[ 9.1] cloud-init[2051]: + systemctl start ecs\n"}}
    )

    # When / Then the reason quotes its last line, and the evidence keeps the console's tail
    result = diagnose(stuck)
    assert result.category == Category.ECS_AGENT_NOT_REGISTERED
    assert "i-aaa printed: [ 9.1] cloud-init[2051]: + systemctl start ecs" in result.reason
    assert result.evidence["console"]["i-aaa"]["console_tail"][-1] == "[ 9.1] cloud-init[2051]: + systemctl start ecs"


def test_a_gpu_less_registration_quotes_a_failed_boot_check():
    # Given an instance registered without GPUs, whose boot check failed on its console
    verdict = "gpupilot-boot-check: FAIL 0 of 1 GPUs visible (g5.xlarge)"
    stuck = snapshot([ec2("i-aaa", 15)], [ecs("i-aaa", gpus=0)]).model_copy(update={"consoles": {"i-aaa": verdict}})

    # When / Then
    result = diagnose(stuck)
    assert result.category == Category.GPU_NOT_REGISTERED and f"i-aaa printed: {verdict}" in result.reason


def test_an_instance_still_booting_is_waiting_for_scale_up():
    # Given an instance launched 2 minutes ago, not registered yet
    result = diagnose(snapshot([ec2("i-aaa", 2)], runnable_minutes=3))

    # Then it is normal
    assert result.category == Category.WAITING_FOR_SCALE_UP
    assert result.evidence["instances_booting"][0]["instance_id"] == "i-aaa"


def test_instances_registered_without_gpus_are_a_gpu_registration_failure():
    # Given an instance that joined the cluster without GPU resources
    result = diagnose(snapshot([ec2("i-aaa", 12)], [ecs("i-aaa", gpus=0)]))

    # Then
    assert result.category == Category.GPU_NOT_REGISTERED
    assert "ECS_ENABLE_GPU_SUPPORT" in result.recommendation
    assert result.evidence["instances_gpu_less"][0]["container_instance"].endswith("/i-aaa")


def test_a_disconnected_agent_is_named():
    result = diagnose(snapshot([ec2("i-aaa", 12)], [ecs("i-aaa", connected=False)]))
    assert result.category == Category.AGENT_DISCONNECTED


def test_mixed_fleet_reports_the_unregistered_instance_with_the_gpu_less_one_in_the_evidence():
    # Given one instance never registered and another registered without GPUs
    result = diagnose(snapshot([ec2("i-aaa", 12), ec2("i-bbb", 12)], [ecs("i-bbb", gpus=0)]))

    # Then the registration failure leads, and both instances are in the evidence
    assert result.category == Category.ECS_AGENT_NOT_REGISTERED
    assert [i["instance_id"] for i in result.evidence["instances_unregistered"]] == ["i-aaa"]
    assert [i["instance_id"] for i in result.evidence["instances_gpu_less"]] == ["i-bbb"]


def test_a_usable_instance_means_no_registration_problem_even_beside_a_broken_one():
    # Given one healthy registered instance and one that never registered
    result = diagnose(snapshot([ec2("i-aaa", 12), ec2("i-bbb", 12)], [ecs("i-bbb")], runnable_minutes=5))

    # Then the job is waiting (for room on the healthy one), not failing on registration
    assert result.category == Category.WAITING_FOR_SCALE_UP
    assert result.evidence["instances_usable"] == 1


def test_a_pool_whose_instances_fill_its_max_vcpus_is_at_max_vcpus():
    result = diagnose(snapshot([ec2("i-aaa", 30)], [ecs("i-aaa")], max_vcpus=4))
    assert result.category == Category.MAX_VCPUS_REACHED
    assert (result.evidence["max_vcpus"], result.evidence["vcpus_in_use"]) == (4, 4)


def in_reservation(snapshot: StuckJobSnapshot) -> StuckJobSnapshot:
    """The same pool made for a reservation: tagged with it, its maxvCpus the reservation's instances."""
    tags = {"gpupilot:reservation": "cr-0123456789abcdef0"}
    return snapshot.model_copy(update={"environment": snapshot.environment.model_copy(update={"tags": tags})})


def test_a_reservation_whose_every_instance_runs_other_jobs_is_waited_for_not_a_vcpu_cap():
    # Given a reservation's pool of one instance (its maxvCpus), registered and running another job
    busy = ecs("i-aaa") | {"runningTasksCount": 1}

    # When a job waiting there is diagnosed
    result = diagnose(in_reservation(snapshot([ec2("i-aaa", 30)], [busy], max_vcpus=4)))

    # Then it waits for the reservation's instance, which the diagnosis names: no maxvCpus to raise
    assert result.category == Category.WAITING_FOR_RESERVATION
    assert "cr-0123456789abcdef0" in result.reason and "i-aaa (1 job)" in result.reason
    assert "max_vcpus" not in result.recommendation


def test_a_reservation_s_instance_launched_for_the_job_is_a_scale_up_not_a_vcpu_cap():
    # Given a reservation's pool whose one instance is booting for the job (not registered yet)
    result = diagnose(in_reservation(snapshot([ec2("i-aaa", 1)], [], runnable_minutes=2, max_vcpus=4)))
    # Then / When: it is the scale-up the job waits for
    assert result.category == Category.WAITING_FOR_SCALE_UP


def test_no_instance_past_the_launch_grace_is_no_instances_launched_with_the_quota_as_cause():
    # Given a VALID pool with no instance 20 minutes on, and the account's G and VT vCPU quota at 0
    result = diagnose(snapshot(runnable_minutes=20, quota=0))

    # Then the quota is named, with how to ask for more
    assert result.category == Category.NO_INSTANCES_LAUNCHED
    assert "L-DB2E81BA" in result.reason and "is 0" in result.reason
    assert "request-service-quota-increase" in result.recommendation
    assert result.evidence["quota_vcpus"] == 0


def test_no_instance_with_room_in_the_quota_is_still_no_instances_launched():
    result = diagnose(snapshot(runnable_minutes=20, quota=64))
    assert result.category == Category.NO_INSTANCES_LAUNCHED
    assert "quota" not in result.reason


def test_no_instance_yet_within_the_launch_grace_is_waiting():
    assert diagnose(snapshot(runnable_minutes=2)).category == Category.WAITING_FOR_SCALE_UP


def test_batchs_own_reason_comes_before_the_fleet():
    # Given Batch's capacity reason and an unregistered instance
    capacity = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Service cannot fulfill the capacity requested"
    result = diagnose(snapshot([ec2("i-aaa", 12)], reason=capacity))

    # Then Batch's words lead, verbatim
    assert result.category == Category.INSUFFICIENT_CAPACITY
    assert result.evidence["status_reason"] == capacity


def test_terminated_instances_are_not_evidence():
    result = diagnose(snapshot([ec2("i-aaa", 60, state="terminated")], runnable_minutes=2))
    assert result.category == Category.WAITING_FOR_SCALE_UP
    assert "instances_unregistered" not in result.evidence


def test_a_job_whose_quota_other_instances_hold_is_diagnosed_as_such_not_as_no_instances_launched():
    # Given a quota of 8 vCPUs, 8 of them taken by the account's other G instances (none of them the pool's)
    given = snapshot(runnable_minutes=20, quota=8)
    assert given.quota is not None
    given.quota.used_vcpus = 8
    given.quota.holders = [QuotaHolder(instance_type="g5.2xlarge", pool="", instances=1, vcpus=8)]

    # When
    result = diagnose(given)

    # Then it names the quota, what holds it and the increase command; it waits (time cures it)
    assert result.category == Category.VCPU_QUOTA_REACHED
    assert "L-DB2E81BA" in result.reason and "is 8 and running instances hold 8 of it" in result.reason
    assert "1 g5.2xlarge not GPU Pilot's (8 vCPUs)" in result.reason
    assert "--quota-code L-DB2E81BA --desired-value 12" in result.recommendation
    assert result.evidence["quota_used_vcpus"] == 8 and result.evidence["quota_holders"][0]["vcpus"] == 8


def test_a_job_queued_behind_the_pools_busy_instances_that_hold_the_quota_is_not_a_normal_scale_up():
    # Given the pool's one usable instance, busy, holding the whole quota of 4 vCPUs, and the job RUNNABLE 1 minute
    given = snapshot([ec2("i-aaa", 5)], [ecs("i-aaa")], runnable_minutes=1, quota=4)
    assert given.quota is not None
    given.quota.used_vcpus = 4
    given.quota.holders = [
        QuotaHolder(instance_type="g5.xlarge", pool="gpupilot-od-x8664-g5-xlarge", instances=1, vcpus=4)
    ]

    # When / Then: the quota, and the pool that holds it
    result = diagnose(given)
    assert result.category == Category.VCPU_QUOTA_REACHED
    assert "1 g5.xlarge in pool gpupilot-od-x8664-g5-xlarge (4 vCPUs)" in result.reason


def test_a_quota_with_room_for_one_more_instance_is_a_normal_scale_up():
    given = snapshot([ec2("i-aaa", 5)], [ecs("i-aaa")], runnable_minutes=1, quota=8)
    assert given.quota is not None
    given.quota.used_vcpus = 4
    assert diagnose(given).category == Category.WAITING_FOR_SCALE_UP
