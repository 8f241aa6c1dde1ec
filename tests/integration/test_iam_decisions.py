"""What each function's role in the synthesized template lets it do, decided as AWS decides it: the calls the
functions make, on moto, authorized with the condition keys AWS presents (the tags an EC2 instance really
carries, the service a role is passed to) and the resources AWS names (the ECS clusters Batch creates)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError

from functions.shared import constants as c
from functions.shared.adapters.batch import BatchJobsAdapter
from functions.shared.adapters.clients import observe_calls, reset_clients, stop_observing
from functions.shared.adapters.fleet import Ec2EcsFleet
from functions.shared.domain.pools.specs import POOL_TAG
from gpupilot.localcloud.dispatch import current_function
from gpupilot.localcloud.iam import Request, authorize, expecting_refusal
from tests.integration.conftest import Cloud

POOL = "gpupilot-od-x8664-g5-xlarge"


@contextmanager
def calling_as(function: str) -> Iterator[None]:
    """AWS calls made here are the deployed function's, authorized against its role (as its handler's are)."""
    token = current_function.set(function)
    try:
        yield
    finally:
        current_function.reset(token)


def refused(call: Any) -> str:
    """The AccessDenied message of a call IAM must refuse (refused on purpose: not a missing grant)."""
    with expecting_refusal(), pytest.raises(ClientError) as error:
        call()
    assert error.value.response["Error"]["Code"] == "AccessDeniedException"
    return str(error.value.response["Error"]["Message"])


def instance_tagged(tags: dict[str, str]) -> str:
    ec2 = boto3.client("ec2")
    specification = [{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]
    launched = ec2.run_instances(
        ImageId="ami-12c6146b", MinCount=1, MaxCount=1, **({"TagSpecifications": specification} if tags else {})
    )
    return str(launched["Instances"][0]["InstanceId"])


def state_of(instance_id: str) -> str:
    reservations = boto3.client("ec2").describe_instances(InstanceIds=[instance_id])["Reservations"]
    return str(reservations[0]["Instances"][0]["State"]["Name"])


def compute_environment(cloud: Cloud, name: str) -> str:
    """A compute environment created through Batch (a GPU Pilot pool's, or another team's): its ECS cluster."""
    batch = boto3.client("batch")
    batch.create_compute_environment(
        computeEnvironmentName=name,
        type="MANAGED",
        computeResources={
            "type": "EC2",
            "minvCpus": 0,
            "maxvCpus": 8,
            "instanceTypes": ["g5.xlarge"],
            "subnets": cloud.deployment.subnets,
            "securityGroupIds": cloud.deployment.security_groups,
            "instanceRole": cloud.deployment.instance_profile_arn,
        },
    )
    [described] = batch.describe_compute_environments(computeEnvironments=[name])["computeEnvironments"]
    return str(described["ecsClusterArn"])


def registered_in(cluster: str) -> str:
    document = json.dumps({"instanceId": instance_tagged({})})
    registered = boto3.client("ecs").register_container_instance(cluster=cluster, instanceIdentityDocument=document)
    return str(registered["containerInstance"]["containerInstanceArn"])


# -- ec2:TerminateInstances: only instances carrying GPU Pilot's pool tag ------------------------------
def test_the_sweep_may_terminate_an_instance_of_a_gpu_pilot_pool(cloud: Cloud) -> None:
    # Given an instance Batch launched for a pool (the pool tag propagated from the compute environment)
    instance = instance_tagged({POOL_TAG: POOL})
    # When the sweep's remediation terminates it
    with calling_as("health_sweep"):
        Ec2EcsFleet().terminate_instances([instance])
    # Then IAM allowed it
    assert state_of(instance) in ("shutting-down", "terminated")


@pytest.mark.parametrize(
    "tags",
    [
        {},
        {POOL_TAG: "analytics-od-cpu"},
        {"team": f"{POOL}"},
        {POOL_TAG.upper(): "other"},
    ],
    ids=["untagged", "another-teams-pool", "gpu-pilot-value-under-another-key", "other-value"],
)
def test_the_sweep_may_not_terminate_an_instance_outside_gpu_pilots_pools(cloud: Cloud, tags: dict[str, str]) -> None:
    # Given an instance of the account that no GPU Pilot pool launched
    instance = instance_tagged(tags)
    # When the sweep tries to terminate it / Then IAM refuses, on the tag the instance really carries
    with calling_as("health_sweep"):
        message = refused(lambda: Ec2EcsFleet().terminate_instances([instance]))
    assert "ec2:TerminateInstances" in message and instance in message
    assert state_of(instance) == "running"


# -- ECS: only the clusters Batch creates for GPU Pilot's compute environments --------------------------
@pytest.mark.parametrize("function", ["health_sweep", "diagnose", "api"])
def test_fleet_reads_reach_the_cluster_batch_created_for_a_gpu_pilot_pool(cloud: Cloud, function: str) -> None:
    # Given a pool's compute environment, whose cluster AWS Batch named after it, with an instance registered
    cluster = compute_environment(cloud, POOL)
    container_instance = registered_in(cluster)
    # When a function that diagnoses reads the pool's fleet / Then it sees the instance
    with calling_as(function):
        described = Ec2EcsFleet().container_instances(cluster)
    assert [c.arn for c in described] == [container_instance]


@pytest.mark.parametrize("function", ["health_sweep", "diagnose", "api"])
def test_fleet_reads_do_not_reach_another_teams_batch_cluster(cloud: Cloud, function: str) -> None:
    # Given another team's Batch compute environment in the same account, its cluster named the same way
    cluster = compute_environment(cloud, "analytics-od-cpu")
    registered_in(cluster)
    # When a GPU Pilot function reads its container instances / Then IAM refuses
    with calling_as(function):
        message = refused(lambda: Ec2EcsFleet().container_instances(cluster))
    assert "ecs:ListContainerInstances" in message and "analytics-od-cpu_Batch_" in message


def test_the_sweep_may_deregister_only_container_instances_of_gpu_pilot_clusters(cloud: Cloud) -> None:
    # Given a container instance in a pool's cluster and one in another team's Batch cluster
    ours, theirs = compute_environment(cloud, POOL), compute_environment(cloud, "analytics-od-cpu")
    our_instance, their_instance = registered_in(ours), registered_in(theirs)
    with calling_as("health_sweep"):
        # When the sweep deregisters each (forced, as it does an agent that left)
        Ec2EcsFleet().deregister_container_instance(ours, our_instance)
        message = refused(lambda: Ec2EcsFleet().deregister_container_instance(theirs, their_instance))
    # Then only the pool's is deregistered
    assert "ecs:DeregisterContainerInstance" in message
    remaining = boto3.client("ecs").list_container_instances(cluster=theirs)["containerInstanceArns"]
    assert remaining == [their_instance]


# -- iam:PassRole through RegisterJobDefinition ----------------------------------------------------------
def job_definition(job_role: str, execution_role: str) -> dict[str, Any]:
    return {
        "jobDefinitionName": f"{POOL}-train",
        "type": "container",
        "containerProperties": {
            "image": "nvidia/cuda:12.4.1-base-ubuntu22.04",
            "command": ["nvidia-smi"],
            "jobRoleArn": job_role,
            "executionRoleArn": execution_role,
            "resourceRequirements": [{"type": "VCPU", "value": "4"}, {"type": "MEMORY", "value": "8192"}],
        },
    }


def test_submit_job_passes_its_job_and_execution_roles_when_it_registers_a_job_definition(cloud: Cloud) -> None:
    # Given the roles the template gives the submit function
    environment = cloud.deployment.environment("submit_job")
    roles = environment[c.ENV_JOB_ROLE_ARN], environment[c.ENV_JOB_EXECUTION_ROLE_ARN]
    # When it registers a job definition naming them (Batch passes them: iam:PassRole with Batch's service key)
    with calling_as("submit_job"):
        arn = BatchJobsAdapter().register_job_definition(job_definition(*roles))
    # Then IAM allowed both roles to be passed
    assert f":job-definition/{POOL}-train:" in arn


def test_submit_job_may_pass_a_role_the_request_names_under_the_job_role_prefix(cloud: Cloud) -> None:
    # Given a role of the account named gpupilot-job-*, the kind a request may name for its job
    trust = json.dumps({"Statement": [{"Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"},
                                       "Action": "sts:AssumeRole"}]})  # fmt: skip
    named = boto3.client("iam").create_role(RoleName="gpupilot-job-trainer", AssumeRolePolicyDocument=trust)
    execution_role = cloud.deployment.environment("submit_job")[c.ENV_JOB_EXECUTION_ROLE_ARN]
    # When the submit function registers a job definition running as it
    with calling_as("submit_job"):
        arn = BatchJobsAdapter().register_job_definition(job_definition(named["Role"]["Arn"], execution_role))
    # Then IAM allowed the role to be passed
    assert f":job-definition/{POOL}-train:" in arn


@pytest.mark.parametrize("service", ["batch.amazonaws.com", "ecs-tasks.amazonaws.com"])
def test_submit_jobs_pass_role_grant_holds_whichever_service_key_batch_presents(cloud: Cloud, service: str) -> None:
    # Given the submit function's policy as deployed, and the roles a job may run as
    policy = cloud.deployment.policies["submit_job"]
    job_role = cloud.deployment.environment("submit_job")[c.ENV_JOB_ROLE_ARN]
    requested = "arn:aws:iam::123456789012:role/gpupilot-job-trainer"
    # Then passing each is allowed whatever service key the pass presents
    for role in (job_role, requested):
        assert authorize(policy, Request("iam:PassRole", role, {"iam:PassedToService": service})) is None


def test_submit_job_may_not_pass_a_role_outside_the_job_role_pattern(cloud: Cloud) -> None:
    # Given a powerful role of the account, not named gpupilot-job-*
    trust = json.dumps({"Statement": [{"Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"},
                                       "Action": "sts:AssumeRole"}]})  # fmt: skip
    admin = boto3.client("iam").create_role(RoleName="admin", AssumeRolePolicyDocument=trust)["Role"]["Arn"]
    execution_role = cloud.deployment.environment("submit_job")[c.ENV_JOB_EXECUTION_ROLE_ARN]
    # When a job definition names it / Then IAM refuses to pass it
    with calling_as("submit_job"):
        message = refused(lambda: BatchJobsAdapter().register_job_definition(job_definition(admin, execution_role)))
    assert "iam:PassRole" in message and admin in message


def test_the_api_may_read_only_gpu_pilot_s_streams_of_batch_s_log_group(cloud: Cloud) -> None:
    # Given Batch's log group with a stream of a GPU Pilot job and one of another application's Batch job
    from functions.shared.adapters.logs import CloudWatchJobLogs

    logs = boto3.client("logs")
    logs.create_log_group(logGroupName="/aws/batch/job")
    for stream in ("gpupilot/default/task-1", "another-team/default/task-2"):
        logs.create_log_stream(logGroupName="/aws/batch/job", logStreamName=stream)
    # When the api function reads each
    with calling_as("api"):
        page = CloudWatchJobLogs().read("/aws/batch/job", "gpupilot/default/task-1", None)
        message = refused(lambda: CloudWatchJobLogs().read("/aws/batch/job", "another-team/default/task-2", None))
    # Then its own is read, and the other team's is refused on the stream's ARN
    assert page.events == []
    assert "logs:GetLogEvents" in message and "log-stream:another-team/default/task-2" in message


# -- reserved capacity: launch templates that target a reservation, tagged as GPU Pilot's ----------------
def test_ensure_queue_may_copy_the_launch_template_to_target_a_reservation(cloud: Cloud) -> None:
    from functions.shared.adapters.reservations import Ec2Reservations
    from functions.shared.domain.reservations.reservation import Reservation

    # Given a Capacity Block of the account, and the stack's launch template
    block = Reservation(reservation_id="cr-0123456789abcdef0", instance_type="g5.xlarge", zone="us-east-1a",
                        state="active", total=1, available=1, capacity_block=True, match="targeted")  # fmt: skip
    base = cloud.deployment.launch_template_name

    # When EnsureJobQueue makes its pool's launch template (twice: the second finds the first)
    with calling_as("ensure_queue"):
        name = Ec2Reservations().launch_template(base, 1, block)
        again = Ec2Reservations().launch_template(base, 1, block)

    # Then IAM allowed it (created with the reservation tag), and it targets the block with its market type
    [version] = boto3.client("ec2").describe_launch_template_versions(LaunchTemplateName=name)["LaunchTemplateVersions"]
    data = version["LaunchTemplateData"]
    assert again == name
    assert data["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationId": "cr-0123456789abcdef0"
    }
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["UserData"]


def test_ensure_queue_may_not_create_a_launch_template_without_the_reservation_tag(
    cloud: Cloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    from functions.shared.adapters import reservations as adapter
    from functions.shared.domain.reservations.reservation import Reservation

    block = Reservation(reservation_id="cr-0123456789abcdef1", instance_type="g5.xlarge", zone="us-east-1a",
                        state="active", total=1, available=1, capacity_block=True, match="targeted")  # fmt: skip
    # Given the pool's launch template tagged under another key than the reservation tag
    monkeypatch.setattr(adapter, "RESERVATION_TAG", "team")

    # When EnsureJobQueue's role makes it / Then IAM refuses the untagged template
    with calling_as("ensure_queue"):
        message = refused(
            lambda: adapter.Ec2Reservations().launch_template(cloud.deployment.launch_template_name, 1, block)
        )
    assert "ec2:CreateLaunchTemplate" in message


# -- DynamoDB: the sweep's index of unfinished jobs, and its predecessor while DynamoDB backfills it -------
# job_events reads it too: the attempts on the host an EC2 spot signal names.
@pytest.mark.parametrize("function", ["health_sweep", "job_events"])
def test_the_unfinished_jobs_may_be_read_from_the_predecessor_index_while_the_new_one_backfills(
    cloud: Cloud, function: str
) -> None:
    from functions.shared.adapters.job_lists import JobLists
    from functions.shared.adapters.job_store import DynamoJobStore
    from functions.shared.domain.requests.job_request import JobRequest

    # Given an unfinished job, and DynamoDB refusing the new index (just deployed, still backfilling)
    table = cloud.deployment.table_name
    request = {"name": "train", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi"]}
    DynamoJobStore(table).create_job("0123456789abcdef0123", JobRequest.model_validate(request))

    refused: list[str] = []

    def backfilling(params: dict[str, Any], **_: Any) -> Any:
        index = json.loads(params["body"]).get("IndexName")  # the request as it will be sent
        if index != c.GSI2_NAME:
            return None
        refused.append(index)
        message = f"Cannot read from backfilling global secondary index: {index}"
        error = {"Error": {"Code": "ValidationException", "Message": message}, "ResponseMetadata": {}}
        return AWSResponse("", 400, {}, None), error

    # Answered as DynamoDB would, once IAM has authorized the call (a `before-call` answer is the response).
    observe_calls(backfilling, event="before-call.dynamodb.Scan")
    reset_clients()  # a client copies the observers when it is made
    try:
        # When the function reads the unfinished jobs
        with calling_as(function):
            jobs = JobLists(table).active_jobs()
    finally:
        stop_observing(backfilling)
        reset_clients()
    # Then the new index refused it once, and the function's role let it read them all from the predecessor
    assert refused == [c.GSI2_NAME]
    assert [job.job_id for job in jobs] == ["0123456789abcdef0123"]
