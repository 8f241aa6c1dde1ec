"""The local cloud's adaptations of moto, each with a test that fails if moto changes under it: what moto
does alone (so we know why the adaptation exists) and what it does adapted (so AWS's behaviour holds)."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from gpupilot.localcloud.clock import LocalClock
from gpupilot.localcloud.dispatch import HandlerDispatcher, LocalFunction
from gpupilot.localcloud.moto_adaptations import ComputeEnvironmentLifecycle, WorkflowClock, adapted_moto
from tests.integration.conftest import MOTO_CONFIG, ManualClock

REGION = "us-east-1"


@pytest.fixture
def aws() -> Iterator[dict[str, Any]]:
    """An empty moto account with what a compute environment needs."""
    with mock_aws(config=MOTO_CONFIG):
        ec2 = boto3.client("ec2", region_name=REGION)
        vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
        subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/24", AvailabilityZone="us-east-1a")["Subnet"]
        group = ec2.create_security_group(GroupName="g", Description="g", VpcId=vpc)["GroupId"]
        iam = boto3.client("iam", region_name=REGION)
        trust = json.dumps({"Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}}]})
        iam.create_role(RoleName="instance", AssumeRolePolicyDocument=trust)
        profile = iam.create_instance_profile(InstanceProfileName="instance")["InstanceProfile"]["Arn"]
        yield {
            "subnet": subnet["SubnetId"],
            "group": group,
            "profile": profile,
            "role": "arn:aws:iam::123456789012:role/instance",
        }


def create_environment(aws: dict[str, Any], name: str = "gpu-ce", service_role: str | None = None) -> str:
    spec: dict[str, Any] = {
        "computeEnvironmentName": name,
        "type": "MANAGED",
        "computeResources": {
            "type": "EC2",
            "minvCpus": 0,
            "maxvCpus": 8,
            "instanceTypes": ["g5.xlarge"],
            "subnets": [aws["subnet"]],
            "securityGroupIds": [aws["group"]],
            "instanceRole": aws["profile"],
        },
    }
    if service_role:
        spec["serviceRole"] = service_role
    return str(boto3.client("batch", region_name=REGION).create_compute_environment(**spec)["computeEnvironmentArn"])


def status_of(name: str = "gpu-ce") -> tuple[str, str]:
    [environment] = boto3.client("batch", region_name=REGION).describe_compute_environments(computeEnvironments=[name])[
        "computeEnvironments"
    ]
    return environment["status"], environment["statusReason"]


def create_queue(arn: str) -> None:
    boto3.client("batch", region_name=REGION).create_job_queue(
        jobQueueName="gpu-queue",
        state="ENABLED",
        priority=1,
        computeEnvironmentOrder=[{"order": 1, "computeEnvironment": arn}],
    )


# -- compute environments ---------------------------------------------------------------------------
def test_moto_alone_says_every_compute_environment_is_valid_at_once_and_requires_a_service_role(aws):
    # Given plain moto / Then: no CREATING phase (why the adaptation exists), and serviceRole required
    with pytest.raises(ClientError, match="ServiceRole is required"):
        create_environment(aws)
    create_environment(aws, service_role=aws["role"])
    assert status_of()[0] == "VALID"


def test_adapted_a_compute_environment_is_creating_then_valid_and_uses_batchs_service_linked_role(aws):
    clock = ManualClock()
    with adapted_moto(lifecycle=ComputeEnvironmentLifecycle(create_seconds=30, clock=clock)):
        # Given a compute environment created without a service role (AWS uses its service-linked role)
        create_environment(aws)
        [environment] = boto3.client("batch", region_name=REGION).describe_compute_environments()["computeEnvironments"]
        # Then it is CREATING at first, then VALID
        assert status_of()[0] == "CREATING"
        assert "/aws-service-role/batch.amazonaws.com/" in environment["serviceRole"]
        clock.advance(30)
        assert status_of()[0] == "VALID"


def test_adapted_a_compute_environment_the_world_breaks_is_invalid_with_its_reason(aws):
    reason = "CLIENT_ERROR - Parameter: SubnetId is invalid."
    with adapted_moto(lifecycle=ComputeEnvironmentLifecycle(create_seconds=0, invalid_reason=lambda _t: reason)):
        create_environment(aws)
        assert status_of() == ("INVALID", reason)


def cluster_of(name: str = "gpu-ce") -> str:
    [environment] = boto3.client("batch", region_name=REGION).describe_compute_environments(computeEnvironments=[name])[
        "computeEnvironments"
    ]
    return str(environment["ecsClusterArn"])


def test_moto_alone_names_every_compute_environments_cluster_alike(aws):
    # Given plain moto / When a compute environment is created
    create_environment(aws, service_role=aws["role"])
    # Then its cluster is not named after it (why the adaptation exists: AWS Batch names it <name>_Batch_<uuid>)
    assert cluster_of().split(":cluster/", 1)[1].startswith("OnDemand_Batch_")


def test_adapted_a_compute_environments_cluster_is_named_after_it_as_aws_batch_names_it(aws):
    with adapted_moto(lifecycle=ComputeEnvironmentLifecycle(create_seconds=0)):
        # Given a compute environment created through Batch
        create_environment(aws, name="gpupilot-od-x8664-g5-xlarge")
        # Then its ECS cluster is <compute environment name>_Batch_<uuid>, and the only cluster ECS knows
        arn = cluster_of("gpupilot-od-x8664-g5-xlarge")
        assert re.fullmatch(
            r"arn:aws:ecs:us-east-1:123456789012:cluster/gpupilot-od-x8664-g5-xlarge_Batch_[0-9a-f-]{36}", arn
        )
        assert boto3.client("ecs", region_name=REGION).list_clusters()["clusterArns"] == [arn]


# -- job queues ------------------------------------------------------------------------------------
def test_moto_alone_accepts_a_queue_on_any_compute_environment(aws):
    create_queue(create_environment(aws, service_role=aws["role"]))
    assert boto3.client("batch", region_name=REGION).describe_job_queues()["jobQueues"]


def test_adapted_a_queue_on_a_compute_environment_that_is_not_valid_is_refused_as_aws_refuses_it(aws):
    clock = ManualClock()
    with adapted_moto(lifecycle=ComputeEnvironmentLifecycle(create_seconds=30, clock=clock)):
        arn = create_environment(aws)
        # When a queue is created while the compute environment is CREATING / Then Batch's ClientException
        with pytest.raises(ClientError) as refused:
            create_queue(arn)
        assert refused.value.response["Error"]["Code"] == "ClientException"
        assert "VALID" in refused.value.response["Error"]["Message"]
        # And once it is VALID the same call succeeds
        clock.advance(30)
        create_queue(arn)


def test_the_wrapped_batch_methods_keep_the_parameters_the_adaptation_relies_on():
    from moto.batch.models import BatchBackend

    create = list(inspect.signature(BatchBackend.create_compute_environment).parameters)
    queue = list(inspect.signature(BatchBackend.create_job_queue).parameters)
    describe = list(inspect.signature(BatchBackend.describe_compute_environments).parameters)
    assert create == ["self", "compute_environment_name", "_type", "state", "compute_resources", "service_role", "tags"]
    assert queue == ["self", "queue_name", "priority", "schedule_policy", "state", "compute_env_order", "tags"]
    assert describe == ["self", "environments"]
    assert list(inspect.signature(BatchBackend.describe_job_queues).parameters) == ["self", "job_queues"]
    assert list(inspect.signature(BatchBackend.delete_job_queue).parameters) == ["self", "queue_name"]
    delete = list(inspect.signature(BatchBackend.delete_compute_environment).parameters)
    assert delete == ["self", "compute_environment_name"]


def test_adaptations_are_undone_when_the_block_ends(aws):
    from moto.batch.models import BatchBackend

    original = BatchBackend.create_job_queue
    with adapted_moto():
        assert BatchBackend.create_job_queue is not original
    assert BatchBackend.create_job_queue is original


# -- Lambda ------------------------------------------------------------------------------------------
def echo(event, context):
    return {"handled": event}


def test_moto_alone_echoes_a_lambda_and_adapted_it_runs_the_handler(aws, monkeypatch):
    monkeypatch.setattr("functions.api.handler.echo", echo, raising=False)
    awslambda = boto3.client("lambda", region_name=REGION)
    trust = json.dumps({"Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}]})
    role = boto3.client("iam", region_name=REGION).create_role(RoleName="fn", AssumeRolePolicyDocument=trust)["Role"]
    awslambda.create_function(FunctionName="fn", Runtime="python3.11", Role=role["Arn"], Handler="x.y",
                              Code={"ZipFile": b"PK"})  # fmt: skip
    plain = json.loads(awslambda.invoke(FunctionName="fn", Payload=b'{"a": 1}')["Payload"].read())
    assert plain == {"a": 1}
    dispatcher = HandlerDispatcher(
        {"fn": LocalFunction(key="fn", name="fn", arn="arn:fn", handler="functions.api.handler.echo", environment={})}
    )
    with adapted_moto(dispatcher=dispatcher):
        adapted = json.loads(awslambda.invoke(FunctionName="fn", Payload=b'{"a": 1}')["Payload"].read())
        queued = awslambda.invoke(FunctionName="fn", InvocationType="Event", Payload=b'{"a": 2}')
        dispatcher.join_background()
    assert adapted == {"handled": {"a": 1}}
    assert queued["StatusCode"] == 202
    assert dispatcher.invocations["functions.api.handler.echo"] == 2


def test_adapted_a_function_s_new_environment_takes_effect_on_its_next_invoke(aws, monkeypatch):
    import os

    monkeypatch.setattr("functions.api.handler.echo", lambda event, context: dict(os.environ), raising=False)
    awslambda = boto3.client("lambda", region_name=REGION)
    trust = json.dumps({"Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}]})
    role = boto3.client("iam", region_name=REGION).create_role(RoleName="fn", AssumeRolePolicyDocument=trust)["Role"]
    awslambda.create_function(FunctionName="fn", Runtime="python3.11", Role=role["Arn"], Handler="x.y",
                              Code={"ZipFile": b"PK"})  # fmt: skip
    dispatcher = HandlerDispatcher(
        {"fn": LocalFunction(key="fn", name="fn", arn="arn:fn", handler="functions.api.handler.echo",
                             environment={"GPUPILOT_POOL_IDLE_HOURS": "24"})}
    )  # fmt: skip
    with adapted_moto(dispatcher=dispatcher):
        awslambda.update_function_configuration(
            FunctionName="fn", Environment={"Variables": {"GPUPILOT_POOL_IDLE_HOURS": "0.5"}}
        )
    assert dispatcher.functions["fn"].environment == {"GPUPILOT_POOL_IDLE_HOURS": "0.5"}


# -- Batch jobs and EC2 offerings --------------------------------------------------------------------
def test_adapted_a_submitted_job_goes_to_the_simulator_instead_of_succeeding(aws):
    submitted: list[Any] = []
    with adapted_moto(on_job_submitted=submitted.append, lifecycle=ComputeEnvironmentLifecycle(create_seconds=0)):
        create_queue(create_environment(aws))
        batch = boto3.client("batch", region_name=REGION)
        definition = batch.register_job_definition(
            jobDefinitionName="d", type="container", containerProperties={"image": "i", "vcpus": 1, "memory": 512}
        )["jobDefinitionArn"]
        job_id = batch.submit_job(jobName="j", jobQueue="gpu-queue", jobDefinition=definition)["jobId"]
    [job] = submitted
    assert job.job_id == job_id


def test_moto_alone_names_a_log_stream_at_submit_that_it_never_creates_and_adapted_none_is_named_before_running(
    aws,
):
    batch = boto3.client("batch", region_name=REGION)
    logs = boto3.client("logs", region_name=REGION)
    definition_spec = {"jobDefinitionName": "d", "type": "container",
                       "containerProperties": {"image": "i", "vcpus": 1, "memory": 512}}  # fmt: skip
    # moto alone: the job is named a stream as it is submitted, and reading that stream fails
    create_queue(create_environment(aws, service_role=aws["role"]))
    definition = batch.register_job_definition(**definition_spec)["jobDefinitionArn"]
    alone = batch.submit_job(jobName="j", jobQueue="gpu-queue", jobDefinition=definition)["jobId"]
    stream = batch.describe_jobs(jobs=[alone])["jobs"][0]["container"]["logStreamName"]
    with pytest.raises(ClientError) as missing:
        logs.get_log_events(logGroupName="/aws/batch/job", logStreamName=stream, startFromHead=True)
    assert missing.value.response["Error"]["Code"] == "ResourceNotFoundException"
    # Adapted: a job that has not reached RUNNING has no stream (the simulator names it at RUNNING)
    submitted: list[Any] = []
    with adapted_moto(on_job_submitted=submitted.append, lifecycle=ComputeEnvironmentLifecycle(create_seconds=0)):
        adapted = batch.submit_job(jobName="k", jobQueue="gpu-queue", jobDefinition=definition)["jobId"]
        [described] = batch.describe_jobs(jobs=[adapted])["jobs"]
    assert "logStreamName" not in described["container"]


def test_adapted_offerings_are_the_worlds_and_restored_afterwards(aws):
    ec2 = boto3.client("ec2", region_name=REGION)

    def zones_offering(instance_type: str) -> set[str]:
        offerings = ec2.describe_instance_type_offerings(
            LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": [instance_type]}]
        )["InstanceTypeOfferings"]
        return {o["Location"] for o in offerings}

    before = zones_offering("g5.xlarge")
    with adapted_moto(offerings=(REGION, ["us-east-1a", "us-east-1b"], {"g5.xlarge": ["us-east-1b"]})):
        assert zones_offering("g5.xlarge") == {"us-east-1b"}
    assert zones_offering("g5.xlarge") == before


def test_moto_alone_lists_every_job_at_once_and_adapted_it_pages_as_aws_does(aws):
    submitted: list[Any] = []
    batch = boto3.client("batch", region_name=REGION)

    def listed_pages() -> list[int]:
        pages = batch.get_paginator("list_jobs").paginate(
            jobQueue="gpu-queue", jobStatus="SUBMITTED", PaginationConfig={"PageSize": 2}
        )
        return [len(page["jobSummaryList"]) for page in pages]

    with adapted_moto(on_job_submitted=submitted.append, lifecycle=ComputeEnvironmentLifecycle(create_seconds=0)):
        create_queue(create_environment(aws))
        definition = batch.register_job_definition(
            jobDefinitionName="d", type="container", containerProperties={"image": "i", "vcpus": 1, "memory": 512}
        )["jobDefinitionArn"]
        for index in range(5):
            batch.submit_job(jobName=f"j{index}", jobQueue="gpu-queue", jobDefinition=definition)
        adapted = listed_pages()
    assert adapted == [2, 2, 1]
    assert listed_pages() == [5]


def test_moto_alone_takes_a_job_into_a_disabled_queue_and_adapted_it_is_refused_as_aws_refuses_it(aws):
    submitted: list[Any] = []
    batch = boto3.client("batch", region_name=REGION)
    with adapted_moto(on_job_submitted=submitted.append, lifecycle=ComputeEnvironmentLifecycle(create_seconds=0)):
        create_queue(create_environment(aws))
        definition = batch.register_job_definition(
            jobDefinitionName="d", type="container", containerProperties={"image": "i", "vcpus": 1, "memory": 512}
        )["jobDefinitionArn"]
        batch.submit_job(jobName="before", jobQueue="gpu-queue", jobDefinition=definition)
        # When the queue is disabled / Then a new job is refused with Batch's ClientException
        batch.update_job_queue(jobQueue="gpu-queue", state="DISABLED")
        with pytest.raises(ClientError) as refused:
            batch.submit_job(jobName="after", jobQueue="gpu-queue", jobDefinition=definition)
        assert refused.value.response["Error"]["Code"] == "ClientException"
        assert "DISABLED" in refused.value.response["Error"]["Message"]
    # And the job already in it is still there; moto alone would have taken the new one
    assert [job.job_name for job in submitted] == ["before"]
    assert batch.submit_job(jobName="after", jobQueue="gpu-queue", jobDefinition=definition)["jobId"]


def test_moto_alone_drops_a_queues_time_limit_actions_and_adapted_they_are_described(aws):
    batch = boto3.client("batch", region_name=REGION)
    actions = [
        {
            "reason": "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
            "state": "RUNNABLE",
            "maxTimeSeconds": 600,
            "action": "CANCEL",
        }
    ]

    def create(name: str, arn: str) -> dict[str, Any]:
        batch.create_job_queue(
            jobQueueName=name,
            state="ENABLED",
            priority=1,
            computeEnvironmentOrder=[{"order": 1, "computeEnvironment": arn}],
            jobStateTimeLimitActions=actions,
        )
        return dict(batch.describe_job_queues(jobQueues=[name])["jobQueues"][0])

    arn = create_environment(aws, service_role=aws["role"])
    assert "jobStateTimeLimitActions" not in create("alone", arn)
    with adapted_moto(lifecycle=ComputeEnvironmentLifecycle(create_seconds=0)):
        assert create("adapted", arn)["jobStateTimeLimitActions"] == actions


# -- EC2's spot market -------------------------------------------------------------------------------
def test_moto_alone_prices_spot_at_a_token_and_adapted_the_worlds_market_answers(aws):
    from gpupilot.localcloud.moto_adaptations import SpotMarket

    ec2 = boto3.client("ec2", region_name=REGION)

    def prices() -> dict[tuple[str, str], str]:
        history = ec2.describe_spot_price_history(InstanceTypes=["g5.xlarge"], ProductDescriptions=["Linux/UNIX"])
        return {(p["InstanceType"], p["AvailabilityZone"]): p["SpotPrice"] for p in history["SpotPriceHistory"]}

    assert set(prices().values()) == {"0.00001"}
    market = SpotMarket(offered=lambda t: ["us-east-1a", "us-east-1b"], hourly_usd={"g5.xlarge": 0.35},
                        placement_score={"g5.xlarge": 3})  # fmt: skip
    with adapted_moto(spot_market=market):
        assert prices() == {("g5.xlarge", "us-east-1a"): "0.350000", ("g5.xlarge", "us-east-1b"): "0.350000"}
        scores = ec2.get_spot_placement_scores(
            InstanceTypes=["g5.xlarge"], TargetCapacity=1, SingleAvailabilityZone=True, RegionNames=[REGION]
        )["SpotPlacementScores"]
        assert [s["Score"] for s in scores] == [3, 3]
        # And a type the world does not price costs a share of its on-demand snapshot price
        unpriced = ec2.describe_spot_price_history(InstanceTypes=["g6.xlarge"])["SpotPriceHistory"]
        assert {float(p["SpotPrice"]) for p in unpriced} == {round(0.8048 * 0.4, 4)}
    # moto alone has no placement scores at all
    with pytest.raises(NotImplementedError):
        ec2.get_spot_placement_scores(InstanceTypes=["g5.xlarge"], TargetCapacity=1, RegionNames=[REGION])


def test_adapted_placement_scores_of_fewer_than_three_types_are_low_as_aws_gives_them(aws):
    from gpupilot.localcloud.moto_adaptations import SpotMarket

    # Given a world where every type would score 9
    ec2 = boto3.client("ec2", region_name=REGION)
    market = SpotMarket(offered=lambda t: ["us-east-1a"])

    def score(types: list[str]) -> int:
        [answer] = ec2.get_spot_placement_scores(
            InstanceTypes=types, TargetCapacity=1, SingleAvailabilityZone=True, RegionNames=[REGION]
        )["SpotPlacementScores"]
        return int(answer["Score"])

    # When EC2 is asked about one, two, then three types / Then one or two score low, three as the world says
    with adapted_moto(spot_market=market):
        assert [score(["g5.xlarge"]), score(["g5.xlarge", "g6.xlarge"])] == [3, 3]
        assert score(["g5.xlarge", "g6.xlarge", "g4dn.xlarge"]) == 9


# -- the AWS Price List (11) ---------------------------------------------------------------------------------
def test_moto_alone_has_no_price_list_and_adapted_it_answers_every_term_match_filter(aws):
    pricing = boto3.client("pricing", region_name="us-east-1")

    def products(**filters: str) -> list[dict[str, str]]:
        terms = [{"Type": "TERM_MATCH", "Field": f, "Value": v} for f, v in ({"regionCode": REGION} | filters).items()]
        answer = pricing.get_products(ServiceCode="AmazonEC2", Filters=terms)["PriceList"]
        return [json.loads(p)["product"]["attributes"] for p in answer]

    with pytest.raises(ClientError, match="Not yet implemented"):
        products(instanceType="p5.48xlarge")
    with adapted_moto():
        # A type sold in Capacity Blocks has a Capacity Block product beside its on-demand one, as in the Price List
        assert [(a["marketoption"], a["operation"]) for a in products(instanceType="p5.48xlarge")] == [
            ("OnDemand", "RunInstances"),
            ("CapacityBlock", "RunInstances:CB"),
        ]
        assert [a["marketoption"] for a in products(instanceType="p5.48xlarge", marketoption="OnDemand")] == [
            "OnDemand"
        ]
        assert products(instanceType="g5.xlarge", marketoption="CapacityBlock") == []
        assert products(instanceType="g5.xlarge", tenancy="Dedicated") == []
        assert {a["instanceType"] for a in products(operation="RunInstances:CB")} >= {"p4d.24xlarge", "p5.48xlarge"}


# -- Batch deletions and limits (12) -----------------------------------------------------------------------------
def test_moto_alone_deletes_an_enabled_queue_and_environment_and_adapted_batch_s_order_is_enforced(aws):
    from functions.shared.adapters.batch import BatchPoolsAdapter

    batch = boto3.client("batch", region_name=REGION)
    # moto alone: an ENABLED queue and the ENABLED compute environment it orders are deleted at once
    create_queue(create_environment(aws, "plain", service_role=aws["role"]))
    batch.delete_job_queue(jobQueue="gpu-queue")
    batch.delete_compute_environment(computeEnvironment="plain")
    assert batch.describe_compute_environments()["computeEnvironments"] == []

    with adapted_moto(lifecycle=ComputeEnvironmentLifecycle(create_seconds=0)):
        pools = BatchPoolsAdapter(batch)
        create_queue(create_environment(aws))
        # Adapted: nothing is deleted out of order; the adapter reports Batch's refusal as "not now"
        assert pools.delete_job_queue("gpu-queue") is False
        assert pools.disable_compute_environment("gpu-ce") is True
        assert pools.delete_compute_environment("gpu-ce") is False  # still ordered by the queue
        with pytest.raises(ClientError, match="must be DISABLED"):
            batch.delete_job_queue(jobQueue="gpu-queue")
        # In Batch's order it all goes
        pools.disable_job_queue("gpu-queue")
        assert not pools.queue_has_jobs("gpu-queue")
        assert pools.delete_job_queue("gpu-queue") is True
        assert pools.delete_compute_environment("gpu-ce") is True
        assert pools.counts() == (0, 0)


def test_moto_alone_forgets_a_deleted_pool_at_once_and_adapted_batch_shows_it_deleting_then_deleted_name_taken(aws):
    from functions.shared.adapters.batch import BatchPoolsAdapter

    batch = boto3.client("batch", region_name=REGION)

    def shown(kind: str = "environment") -> list[tuple[str, str]]:
        if kind == "queue":
            return [(q["jobQueueName"], q["status"]) for q in batch.describe_job_queues()["jobQueues"]]
        return [
            (e["computeEnvironmentName"], e["status"])
            for e in batch.describe_compute_environments()["computeEnvironments"]
        ]

    # moto alone: a deleted compute environment is gone at once, and its name free at once
    create_environment(aws, "plain", service_role=aws["role"])
    batch.update_compute_environment(computeEnvironment="plain", state="DISABLED")
    batch.delete_compute_environment(computeEnvironment="plain")
    assert shown() == []
    create_environment(aws, "plain", service_role=aws["role"])

    clock = ManualClock()
    lifecycle = ComputeEnvironmentLifecycle(create_seconds=0, clock=clock, delete_seconds=60, deleted_seconds=600)
    with adapted_moto(lifecycle=lifecycle):
        pools = BatchPoolsAdapter(batch)
        create_queue(create_environment(aws))
        pools.disable_job_queue("gpu-queue")
        pools.disable_compute_environment("gpu-ce")
        # When the queue is deleted / Then Batch shows it DELETING, and it still orders its compute environment
        assert pools.delete_job_queue("gpu-queue") is True
        assert shown("queue") == [("gpu-queue", "DELETING")]
        assert pools.delete_compute_environment("gpu-ce") is False
        # And once Batch has deleted it, it is shown DELETED and orders nothing: the compute environment can go
        clock.advance(60)
        assert shown("queue") == [("gpu-queue", "DELETED")]
        assert pools.delete_compute_environment("gpu-ce") is True
        assert ("gpu-ce", "DELETING") in shown()
        # And while Batch shows it, DELETING or DELETED, its name is taken (and a DELETED one counts no more)
        for _ in range(2):
            with pytest.raises(ClientError, match="Object already exists") as refused:
                create_environment(aws)
            assert refused.value.response["Error"]["Code"] == "ClientException"
            clock.advance(60)
        assert ("gpu-ce", "DELETED") in shown()
        assert pools.counts() == (1, 0)  # "plain" only
        with pytest.raises(ClientError, match="Object already exists"):
            create_queue(pools.describe_compute_environment("plain").arn)  # type: ignore[union-attr]
        # And once Batch forgets them, they are gone and their names free
        clock.advance(600)
        assert shown() == [("plain", "VALID")] and shown("queue") == []
        create_environment(aws)


def test_adapted_batch_allows_50_compute_environments_and_50_queues_per_region(aws):
    from moto.batch.models import BatchBackend

    batch = boto3.client("batch", region_name=REGION)
    with adapted_moto(lifecycle=ComputeEnvironmentLifecycle(create_seconds=0)):
        for index in range(50):
            batch.create_compute_environment(computeEnvironmentName=f"ce-{index}", type="UNMANAGED")
        with pytest.raises(ClientError, match="allows 50") as refused:
            batch.create_compute_environment(computeEnvironmentName="ce-50", type="UNMANAGED", serviceRole=aws["role"])
        assert refused.value.response["Error"]["Code"] == "ClientException"
        arn = batch.describe_compute_environments(computeEnvironments=["ce-0"])["computeEnvironments"][0]
        for index in range(50):
            batch.create_job_queue(
                jobQueueName=f"q-{index}", priority=1, state="ENABLED",
                computeEnvironmentOrder=[{"order": 1, "computeEnvironment": arn["computeEnvironmentArn"]}],
            )  # fmt: skip
        with pytest.raises(ClientError, match="allows 50"):
            batch.create_job_queue(
                jobQueueName="q-50", priority=1, state="ENABLED",
                computeEnvironmentOrder=[{"order": 1, "computeEnvironment": arn["computeEnvironmentArn"]}],
            )  # fmt: skip
    assert "delete_job_queue" in vars(BatchBackend)  # undone: moto's own again
    batch.create_compute_environment(computeEnvironmentName="ce-50", type="UNMANAGED", serviceRole=aws["role"])


def test_moto_alone_drops_a_finished_jobs_exit_code_and_adapted_it_is_described_as_aws_does(aws):
    submitted: list[Any] = []
    batch = boto3.client("batch", region_name=REGION)

    def finish(job: Any, exit_code: int) -> None:  # what the local cloud's simulator does when a job ends
        job._start_attempt()
        job.exit_code, job.job_stopped, job.job_stopped_reason = exit_code, True, "Essential container in task exited"
        job.job_stopped_at = job.job_started_at
        job.status = "FAILED"
        job._stop_attempt()

    with adapted_moto(on_job_submitted=submitted.append, lifecycle=ComputeEnvironmentLifecycle(create_seconds=0)):
        create_queue(create_environment(aws))
        definition = batch.register_job_definition(
            jobDefinitionName="d", type="container", containerProperties={"image": "i", "vcpus": 1, "memory": 512}
        )["jobDefinitionArn"]
        job_id = batch.submit_job(jobName="j", jobQueue="gpu-queue", jobDefinition=definition)["jobId"]
        finish(submitted[0], 3)
        [adapted] = batch.describe_jobs(jobs=[job_id])["jobs"]
    [alone] = batch.describe_jobs(jobs=[job_id])["jobs"]
    assert "exitCode" not in alone["container"] and "exitCode" not in alone["attempts"][-1]["container"]
    assert adapted["container"]["exitCode"] == 3
    assert adapted["attempts"][-1]["container"]["exitCode"] == 3
    assert adapted["attempts"][-1]["statusReason"] == "Essential container in task exited"


def test_moto_alone_drops_the_last_attempts_container_reason_and_adapted_the_job_carries_it(aws):
    submitted: list[Any] = []
    batch = boto3.client("batch", region_name=REGION)
    reason = "CannotStartContainerError: ... nvidia-container-cli: initialization error: nvml error"

    with adapted_moto(on_job_submitted=submitted.append, lifecycle=ComputeEnvironmentLifecycle(create_seconds=0)):
        create_queue(create_environment(aws))
        definition = batch.register_job_definition(
            jobDefinitionName="d", type="container", containerProperties={"image": "i", "vcpus": 1, "memory": 512}
        )["jobDefinitionArn"]
        job_id = batch.submit_job(jobName="j", jobQueue="gpu-queue", jobDefinition=definition)["jobId"]
        job = submitted[0]
        job._start_attempt()  # what the simulator does when a container cannot start on a bad host
        job.latest_attempt["container"]["reason"] = reason
        job.job_stopped, job.job_stopped_reason, job.status = True, "Task failed to start", "FAILED"
        job.job_stopped_at = job.job_started_at
        job._stop_attempt()
        [adapted] = batch.describe_jobs(jobs=[job_id])["jobs"]
    [alone] = batch.describe_jobs(jobs=[job_id])["jobs"]
    assert "reason" not in alone["container"]
    assert adapted["container"]["reason"] == reason


def a_container_instance(cluster: str = "c") -> tuple[str, str]:
    """(instance id, container instance ARN) of an EC2 instance registered in a new cluster."""
    ec2, ecs = boto3.client("ec2", region_name=REGION), boto3.client("ecs", region_name=REGION)
    instance = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
    ecs.create_cluster(clusterName=cluster)
    from moto.ecs.models import ecs_backends

    return instance, ecs_backends["123456789012"][REGION].register_container_instance(
        cluster, instance
    ).container_instance_arn


def test_moto_alone_answers_every_console_alike_and_adapted_each_simulated_instance_has_its_own(aws):
    ec2 = boto3.client("ec2", region_name=REGION)
    instance, _ = a_container_instance()
    consoles = {instance: "x" * (70 * 1024) + "\ngpupilot-boot-check: FAIL 0 of 1 GPUs visible (g5.xlarge)\n"}
    alone = ec2.get_console_output(InstanceId=instance, Latest=True)["Output"]
    with adapted_moto(console_of=consoles.get):
        adapted = ec2.get_console_output(InstanceId=instance, Latest=True)["Output"]
        with pytest.raises(ClientError, match=r"InvalidInstanceID\.NotFound"):
            ec2.get_console_output(InstanceId="i-0123456789abcdef0")
    assert "Linux version 2.6.16-xenU" in alone  # moto's one sample, a 2006 Xen kernel's boot
    # The instance's own console, its latest 64 KB ("Only the most recent 64 KB of console output is available")
    assert adapted.endswith("gpupilot-boot-check: FAIL 0 of 1 GPUs visible (g5.xlarge)\n")
    assert len(adapted.encode()) == 64 * 1024


def test_moto_alone_fails_draining_in_a_cluster_without_instances_and_adapted_it_answers_as_aws(aws):
    ecs = boto3.client("ecs", region_name=REGION)
    ecs.create_cluster(clusterName="empty")
    with pytest.raises(KeyError):  # moto's server answers this with an HTTP 500
        ecs.update_container_instances_state(cluster="empty", containerInstances=["4f1c"], status="DRAINING")
    with adapted_moto():
        answer = ecs.update_container_instances_state(cluster="empty", containerInstances=["4f1c"], status="DRAINING")
        with pytest.raises(ClientError, match="InvalidParameterException"):
            ecs.update_container_instances_state(cluster="empty", containerInstances=[str(n) for n in range(11)],
                                                 status="DRAINING")  # fmt: skip
        _, arn = a_container_instance("busy")
        drained = ecs.update_container_instances_state(cluster="busy", containerInstances=[arn], status="DRAINING")
    # An instance ECS does not know is a failure entry, as DescribeContainerInstances answers it; 10 at most
    assert answer["failures"][0]["reason"] == "MISSING" and answer["containerInstances"] == []
    assert drained["containerInstances"][0]["status"] == "DRAINING"


def test_moto_alone_never_reports_health_and_adapted_it_does_when_asked(aws):
    ecs = boto3.client("ecs", region_name=REGION)
    _, arn = a_container_instance()
    asked = {"cluster": "c", "containerInstances": [arn], "include": ["CONTAINER_INSTANCE_HEALTH"]}
    [alone] = ecs.describe_container_instances(**asked)["containerInstances"]
    with adapted_moto():
        [healthy] = ecs.describe_container_instances(**asked)["containerInstances"]
        [unasked] = ecs.describe_container_instances(cluster="c", containerInstances=[arn])["containerInstances"]
        from moto.ecs.models import ecs_backends

        [registered] = ecs_backends["123456789012"][REGION].container_instances["c"].values()
        registered.gpupilot_impaired = "Docker is unresponsive"
        [impaired] = ecs.describe_container_instances(**asked)["containerInstances"]
    assert "healthStatus" not in alone and "healthStatus" not in unasked
    assert healthy["healthStatus"]["overallStatus"] == "OK"
    assert healthy["healthStatus"]["details"][0]["type"] == "CONTAINER_RUNTIME"
    assert impaired["healthStatus"]["overallStatus"] == "IMPAIRED"
    assert impaired["healthStatus"]["details"][0]["statusReason"] == "Docker is unresponsive"


# -- Step Functions: simulated time ------------------------------------------------------------------
A_DAY = 86400


@pytest.fixture
def workflows() -> Iterator[Any]:
    """moto executing state machines, with a function a callback task can invoke (it never sends its token)."""
    with mock_aws(config={**MOTO_CONFIG, "stepfunctions": {"execute_state_machine": True}}):
        iam = boto3.client("iam", region_name=REGION)
        trust = json.dumps({"Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}]})
        role = iam.create_role(RoleName="fn", AssumeRolePolicyDocument=trust)["Role"]["Arn"]
        boto3.client("lambda", region_name=REGION).create_function(
            FunctionName="fn", Runtime="python3.11", Role=role, Handler="x.y", Code={"ZipFile": b"PK"}
        )
        yield boto3.client("stepfunctions", region_name=REGION), role


def start(workflows: Any, name: str, states: dict[str, Any]) -> str:
    sfn, role = workflows
    definition = json.dumps({"StartAt": next(iter(states)), "States": states})
    machine = sfn.create_state_machine(name=name, definition=definition, roleArn=role)["stateMachineArn"]
    return str(sfn.start_execution(stateMachineArn=machine)["executionArn"])


def await_history(
    workflows: Any, execution: str, event_type: str, timeout: float = 60, count: int = 1
) -> list[dict[str, Any]]:
    """The execution's history once it holds `count` events of `event_type` (fails at the deadline)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        events = workflows[0].get_execution_history(executionArn=execution, maxResults=1000)["events"]
        if sum(e["type"] == event_type for e in events) >= count:
            return list(events)
        assert time.monotonic() < deadline, f"no {event_type} in {timeout:.0f} s: {[e['type'] for e in events]}"
        time.sleep(0.05)


A_DAY_LONG_WAIT = {"Wait": {"Type": "Wait", "Seconds": A_DAY, "Next": "Done"}, "Done": {"Type": "Succeed"}}


def test_moto_alone_sleeps_a_wait_state_in_real_seconds(workflows):
    # Given plain moto / When a workflow enters a day-long Wait state
    execution = start(workflows, "waits", A_DAY_LONG_WAIT)
    await_history(workflows, execution, "WaitStateEntered")
    # Then it is still waiting (why the adaptation exists: a simulated day would take a day)
    assert workflows[0].describe_execution(executionArn=execution)["status"] == "RUNNING"
    workflows[0].stop_execution(executionArn=execution)


def test_adapted_a_wait_state_passes_at_the_workflow_clocks_speed(workflows):
    # Given a workflow clock running a day in a tenth of a second
    with adapted_moto(workflow_clock=WorkflowClock(speedup=A_DAY * 10)):
        # When a workflow waits a day (Seconds) and then a day read from its input (SecondsPath)
        execution = start(
            workflows,
            "waits",
            {
                "Pass": {"Type": "Pass", "Result": A_DAY, "ResultPath": "$.seconds", "Next": "Wait"},
                "Wait": {"Type": "Wait", "Seconds": A_DAY, "Next": "WaitPath"},
                "WaitPath": {"Type": "Wait", "SecondsPath": "$.seconds", "Next": "Done"},
                "Done": {"Type": "Succeed"},
            },
        )
        # Then both waits pass and the execution succeeds
        await_history(workflows, execution, "ExecutionSucceeded")


def test_adapted_a_task_timeout_passes_at_the_workflow_clocks_speed_but_not_below_its_floor(workflows):
    callback = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
        "Parameters": {"FunctionName": "fn", "Payload": {"token.$": "$$.Task.Token"}},
        "TimeoutSeconds": A_DAY,
        "Catch": [{"ErrorEquals": ["States.Timeout"], "Next": "TimedOut"}],
        "Next": "Done",
    }
    clock = WorkflowClock(speedup=A_DAY * 100, timeout_floor_seconds=0.2)
    # The clock: a day's timeout would last a thousandth of a second, so the floor holds it
    assert clock.timeout_seconds(A_DAY) == 0.2 and clock.timeout_seconds(0.1) == 0.1
    with adapted_moto(workflow_clock=clock):
        # When a callback task that is never resumed times out after a simulated day
        execution = start(
            workflows, "times-out", {"Wait": callback, "TimedOut": {"Type": "Pass", "End": True},
                                     "Done": {"Type": "Succeed"}}
        )  # fmt: skip
        events = await_history(workflows, execution, "ExecutionSucceeded")
    # Then its timeout was caught: the workflow went on to TimedOut
    entered = [e["stateEnteredEventDetails"]["name"] for e in events if e["type"].endswith("StateEntered")]
    assert entered == ["Wait", "TimedOut"]


def test_adapted_a_task_heartbeat_passes_at_the_workflow_clocks_speed(workflows):
    callback = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
        "Parameters": {"FunctionName": "fn", "Payload": {"token.$": "$$.Task.Token"}},
        # At the clock's speed the task's timeout still lasts 100 s: only its heartbeat can end it in time
        "TimeoutSeconds": 99_999_999,
        "HeartbeatSeconds": A_DAY,
        "Catch": [{"ErrorEquals": ["States.Timeout"], "Next": "TimedOut"}],
        "Next": "Done",
    }
    with adapted_moto(workflow_clock=WorkflowClock(speedup=1_000_000, timeout_floor_seconds=0.2)):
        # When a callback task that never sends a heartbeat waits
        execution = start(
            workflows, "no-heartbeat", {"Wait": callback, "TimedOut": {"Type": "Pass", "End": True},
                                        "Done": {"Type": "Succeed"}}
        )  # fmt: skip
        events = await_history(workflows, execution, "ExecutionSucceeded")
    # Then its missed heartbeat (a simulated day) ended it
    entered = [e["stateEnteredEventDetails"]["name"] for e in events if e["type"].endswith("StateEntered")]
    assert entered == ["Wait", "TimedOut"]


def test_adapted_a_wait_of_a_day_then_until_a_moment_pass_when_the_local_clouds_clock_is_advanced(workflows):
    # Given the workflow's time on a local cloud's clock, at real speed
    clock = LocalClock()
    moment = (datetime.now(UTC) + timedelta(seconds=A_DAY + 3600)).strftime("%Y-%m-%dT%H:%M:%SZ")
    with adapted_moto(workflow_clock=WorkflowClock(clock=clock)):
        # When a workflow waits a day (Seconds), then until a moment an hour after that day (Timestamp)
        execution = start(
            workflows,
            "advanced",
            {
                "Day": {"Type": "Wait", "Seconds": A_DAY, "Next": "Until"},
                "Until": {"Type": "Wait", "Timestamp": moment, "Next": "Done"},
                "Done": {"Type": "Succeed"},
            },
        )
        await_history(workflows, execution, "WaitStateEntered")
        clock.advance(A_DAY)
        entered = await_history(workflows, execution, "WaitStateEntered", count=2)
        still = workflows[0].describe_execution(executionArn=execution)["status"]
        clock.advance(3600)
        # Then each wait passed only once the clock passed it, and the execution succeeded
        events = await_history(workflows, execution, "ExecutionSucceeded")
    waits = [e["stateEnteredEventDetails"]["name"] for e in entered if e["type"] == "WaitStateEntered"]
    assert (waits, still) == (["Day", "Until"], "RUNNING")
    assert [e["stateExitedEventDetails"]["name"] for e in events if e["type"] == "WaitStateExited"] == ["Day", "Until"]


@pytest.mark.parametrize("limit", ["TimeoutSeconds", "HeartbeatSeconds"])
def test_adapted_a_tasks_timeout_and_heartbeat_pass_when_the_local_clouds_clock_is_advanced(workflows, limit):
    # Given a callback task that is never resumed, allowed a day (its timeout, or its heartbeat within a longer one)
    callback = {
        "Type": "Task",
        "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
        "Parameters": {"FunctionName": "fn", "Payload": {"token.$": "$$.Task.Token"}},
        "TimeoutSeconds": 99_999_999,
        limit: A_DAY,
        "Catch": [{"ErrorEquals": ["States.Timeout"], "Next": "TimedOut"}],
        "Next": "Done",
    }
    clock = LocalClock()
    with adapted_moto(workflow_clock=WorkflowClock(clock=clock)):
        # When the workflow waits on it, and the local cloud's clock is advanced a day
        execution = start(
            workflows, f"limit-{limit}", {"Wait": callback, "TimedOut": {"Type": "Pass", "End": True},
                                           "Done": {"Type": "Succeed"}}
        )  # fmt: skip
        await_history(workflows, execution, "TaskSubmitted")
        still = workflows[0].describe_execution(executionArn=execution)["status"]
        clock.advance(A_DAY)
        events = await_history(workflows, execution, "ExecutionSucceeded")
    # Then it waited until then, and its timeout was caught: the workflow went on to TimedOut
    entered = [e["stateEnteredEventDetails"]["name"] for e in events if e["type"].endswith("StateEntered")]
    assert (still, entered) == ("RUNNING", ["Wait", "TimedOut"])


def test_adapted_each_capacity_region_answers_its_own_offerings_quotas_and_spot_market(aws):
    from gpupilot.localcloud.moto_adaptations import RegionWorldView, SpotMarket

    west = "us-west-2"

    def offered_in(region: str) -> set[str]:
        offerings = boto3.client("ec2", region_name=region).describe_instance_type_offerings(
            LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": ["g5.xlarge"]}]
        )["InstanceTypeOfferings"]
        return {o["Location"] for o in offerings}

    def quota_in(region: str) -> float:
        quotas = boto3.client("service-quotas", region_name=region)
        return float(quotas.get_service_quota(ServiceCode="ec2", QuotaCode="L-DB2E81BA")["Quota"]["Value"])

    def spot_in(region: str) -> set[str]:
        history = boto3.client("ec2", region_name=region).describe_spot_price_history(InstanceTypes=["g5.xlarge"])
        return {p["SpotPrice"] for p in history["SpotPriceHistory"]}

    # moto alone answers every region's offerings from its own catalogue, the same quota everywhere
    assert f"{west}b" in offered_in(west)
    home_market = SpotMarket(offered=lambda t: ["us-east-1a"], hourly_usd={"g5.xlarge": 0.35})
    west_market = SpotMarket(offered=lambda t: [f"{west}a"], hourly_usd={"g5.xlarge": 0.5})
    view = RegionWorldView(zones=[f"{west}a", f"{west}b"], offered={"g5.xlarge": [f"{west}a"]},
                           quotas={"L-DB2E81BA": 0}, spot=west_market)  # fmt: skip
    with adapted_moto(quotas={"L-DB2E81BA": 64}, spot_market=home_market, regions={west: view}):
        # Adapted, us-west-2 answers from its own part of the world, home from the top level
        assert offered_in(west) == {f"{west}a"}
        assert (quota_in(REGION), quota_in(west)) == (64.0, 0.0)
        assert (spot_in(REGION), spot_in(west)) == ({"0.350000"}, {"0.500000"})


def test_adapted_a_compute_environment_is_invalid_by_the_world_of_the_region_its_arn_names(aws):
    west = "us-west-2"
    ec2 = boto3.client("ec2", region_name=west)
    vpc = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.1.0.0/24", AvailabilityZone=f"{west}a")["Subnet"]["SubnetId"]
    group = ec2.create_security_group(GroupName="g", Description="g", VpcId=vpc)["GroupId"]
    lifecycle = ComputeEnvironmentLifecycle(
        create_seconds=0, invalid_reason_in={west: lambda types: "CLIENT_ERROR - x"}
    )
    with adapted_moto(lifecycle=lifecycle):
        # Given the same compute environment in home and in us-west-2, whose world breaks it
        create_environment(aws)
        resources = {"type": "EC2", "minvCpus": 0, "maxvCpus": 8, "instanceTypes": ["g5.xlarge"],
                     "subnets": [subnet], "securityGroupIds": [group], "instanceRole": aws["profile"]}  # fmt: skip
        batch = boto3.client("batch", region_name=west)
        batch.create_compute_environment(computeEnvironmentName="gpu-ce", type="MANAGED", computeResources=resources)
        # Then only us-west-2's is INVALID, with its world's reason
        [described] = batch.describe_compute_environments(computeEnvironments=["gpu-ce"])["computeEnvironments"]
        assert (described["status"], described["statusReason"]) == ("INVALID", "CLIENT_ERROR - x")
        assert status_of()[0] == "VALID"


def test_moto_alone_pages_an_index_by_the_table_s_items_and_adapted_by_the_index_s_entries():
    # Given a table of 12 items of 200 KB each, indexed by an INCLUDE index that projects none of their bulk
    with mock_aws(config=MOTO_CONFIG):
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        keys = [{"AttributeName": name, "AttributeType": "S"} for name in ("pk", "ipk")]
        include = {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["small"]}
        dynamodb.create_table(
            TableName="t", BillingMode="PAY_PER_REQUEST", AttributeDefinitions=keys,
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            GlobalSecondaryIndexes=[{"IndexName": "lean", "Projection": include,
                                     "KeySchema": [{"AttributeName": "ipk", "KeyType": "HASH"}]}],
        )  # fmt: skip
        for n in range(12):
            item = {
                "pk": {"S": f"item{n:02d}"},
                "ipk": {"S": "all"},
                "small": {"N": str(n)},
                "bulk": {"S": "x" * 200_000},
            }
            dynamodb.put_item(TableName="t", Item=item)

        def index_pages() -> dict[str, list[int]]:
            queried = dynamodb.get_paginator("query").paginate(
                TableName="t", IndexName="lean", KeyConditionExpression="ipk = :all",
                ExpressionAttributeValues={":all": {"S": "all"}},
            )  # fmt: skip
            scanned = dynamodb.get_paginator("scan").paginate(TableName="t", IndexName="lean")
            return {
                read: [len(page["Items"]) for page in pages] for read, pages in (("query", queried), ("scan", scanned))
            }

        # When the index is queried and scanned, alone and adapted
        with adapted_moto():
            adapted = index_pages()
        alone = index_pages()

    # Then moto alone counts the bulk it does not return against the 1 MB page; adapted, the 12 entries are one page
    for read in ("query", "scan"):
        assert len(alone[read]) > 1 and sum(alone[read]) == 12, alone
        assert adapted[read] == [12], adapted


# -- reserved capacity ------------------------------------------------------------------------------
def reservation_world(*more: dict[str, Any]) -> Any:
    from gpupilot.localcloud.world import World

    held = {"instance_type": "g5.xlarge", "zone": "us-east-1a", "count": 2, "hours": 24}
    return World.model_validate(
        {
            "capacity_reservations": [held, *({**held, **changes} for changes in more)],
            "capacity_block_offerings": [{"instance_type": "p5.48xlarge", "count": 2, "hours": 72,
                                          "starts_in_seconds": 3600, "upfront_usd": 94000}],
        }
    )  # fmt: skip


def test_moto_alone_has_no_capacity_reservation_calls(aws):
    # Given moto alone; When the account's reservations or the Capacity Blocks on offer are asked for
    ec2 = boto3.client("ec2", region_name=REGION)
    # Then moto does not implement them
    for call in (
        lambda: ec2.describe_capacity_reservations(),
        lambda: ec2.describe_capacity_block_offerings(CapacityDurationHours=24),
    ):
        with pytest.raises(NotImplementedError, match=r"not been implemented"):
            call()


def test_adapted_reservations_are_the_worlds_with_their_state_and_free_instances(aws):
    from gpupilot.localcloud.reservations import ReservationBook

    # Given a world with an active open reservation of 2 g5.xlarge, and a Capacity Block beginning in an hour
    book = ReservationBook(reservation_world({"capacity_block": True, "starts_in_seconds": 3600}))
    with adapted_moto(reservations=book):
        ec2 = boto3.client("ec2", region_name=REGION)
        # When an instance is launched into the active one, and the reservations are described
        active = book.launch_into(None, "g5.xlarge", "us-east-1a", REGION)
        assert active is not None
        book.hold(active, "i-1")
        described = ec2.describe_capacity_reservations()["CapacityReservations"]
        scheduled = ec2.describe_capacity_reservations(Filters=[{"Name": "state", "Values": ["scheduled"]}])
        paged = list(ec2.get_paginator("describe_capacity_reservations").paginate(PaginationConfig={"PageSize": 1}))

    # Then EC2's shapes say each as EC2 would: 1 of 2 free in the active one, none yet in the block (its size tagged)
    by_state = {r["State"]: r for r in described}
    assert (by_state["active"]["TotalInstanceCount"], by_state["active"]["AvailableInstanceCount"]) == (2, 1)
    assert by_state["active"]["InstanceMatchCriteria"] == "open"
    block = by_state["scheduled"]
    assert (block["ReservationType"], block["InstanceMatchCriteria"], block["AvailableInstanceCount"]) == (
        "capacity-block", "targeted", 0)  # fmt: skip
    assert {"Key": "aws:ec2capacityreservation:incrementalRequestedQuantity", "Value": "2"} in block["Tags"]
    assert [r["CapacityReservationId"] for r in scheduled["CapacityReservations"]] == [block["CapacityReservationId"]]
    assert sum(len(page["CapacityReservations"]) for page in paged) == 2


def test_adapted_a_capacity_regions_reservations_and_offerings_are_answered_in_that_region_only(aws):
    from gpupilot.localcloud.reservations import ReservationBook
    from gpupilot.localcloud.world import World

    west = "us-west-2"
    # Given a world whose account holds a reservation in us-west-2, where a Capacity Block is also offered
    world = World.model_validate({
        "regions": {west: {"zones": [f"{west}a"]}},
        "capacity_reservations": [{"instance_type": "g5.xlarge", "zone": f"{west}a", "region": west, "count": 2}],
        "capacity_block_offerings": [{"instance_type": "p5.48xlarge", "hours": 24, "upfront_usd": 900,
                                      "region": west}],
    })  # fmt: skip
    book = ReservationBook(world)
    with adapted_moto(reservations=book):

        def held_in(region: str) -> list[dict]:
            return boto3.client("ec2", region_name=region).describe_capacity_reservations()["CapacityReservations"]

        def offered_in(region: str) -> list[dict]:
            ec2 = boto3.client("ec2", region_name=region)
            return ec2.describe_capacity_block_offerings(CapacityDurationHours=24)["CapacityBlockOfferings"]

        # When each region is asked / Then us-west-2 answers its reservation and offering, home none of them
        [held] = held_in(west)
        assert (held["AvailabilityZone"], held["CapacityReservationArn"].split(":")[3]) == (f"{west}a", west)
        assert held_in(REGION) == [] and offered_in(REGION) == []
        [offering] = offered_in(west)
        # And a launch in home never lands in us-west-2's reservation; one in us-west-2's zone does
        assert book.launch_into(None, "g5.xlarge", f"{west}a", REGION) is None
        assert book.launch_into(None, "g5.xlarge", f"{west}a", west) is not None
        # And the offering is bought where it is offered
        home = boto3.client("ec2", region_name=REGION)
        with pytest.raises(ClientError):
            home.purchase_capacity_block(CapacityBlockOfferingId=offering["CapacityBlockOfferingId"],
                                         InstancePlatform="Linux/UNIX")  # fmt: skip
        bought = boto3.client("ec2", region_name=west).purchase_capacity_block(
            CapacityBlockOfferingId=offering["CapacityBlockOfferingId"], InstancePlatform="Linux/UNIX"
        )["CapacityReservation"]
        assert bought["AvailabilityZone"] == f"{west}a" and len(held_in(west)) == 2


def test_adapted_an_unknown_reservation_is_not_found_as_aws_says(aws):
    from gpupilot.localcloud.reservations import ReservationBook

    with adapted_moto(reservations=ReservationBook(reservation_world())):
        ec2 = boto3.client("ec2", region_name=REGION)
        with pytest.raises(ClientError) as refused:
            ec2.describe_capacity_reservations(CapacityReservationIds=["cr-0123456789abcdef0"])
    assert refused.value.response["Error"]["Code"] == "InvalidCapacityReservationId.NotFound"


def test_adapted_block_offerings_are_listed_and_one_is_bought_once(aws):
    from gpupilot.localcloud.reservations import ReservationBook

    # Given a world offering a 3-day block of 2 p5.48xlarge
    book = ReservationBook(reservation_world())
    with adapted_moto(reservations=book):
        ec2 = boto3.client("ec2", region_name=REGION)
        # When the offerings are listed, one is bought, and it is bought again
        [offering] = ec2.describe_capacity_block_offerings(
            InstanceType="p5.48xlarge", InstanceCount=2, CapacityDurationHours=72
        )["CapacityBlockOfferings"]
        other = ec2.describe_capacity_block_offerings(InstanceType="p5.48xlarge", CapacityDurationHours=24)
        bought = ec2.purchase_capacity_block(
            CapacityBlockOfferingId=offering["CapacityBlockOfferingId"], InstancePlatform="Linux/UNIX"
        )["CapacityReservation"]
        with pytest.raises(ClientError):
            ec2.purchase_capacity_block(
                CapacityBlockOfferingId=offering["CapacityBlockOfferingId"], InstancePlatform="Linux/UNIX"
            )

    # Then the offering has its fee (a string, as EC2 gives it), only the asked duration is offered, and the
    # purchase is a scheduled, targeted Capacity Block reservation
    assert (offering["UpfrontFee"], offering["CapacityBlockDurationHours"]) == ("94000.00", 72)
    assert other["CapacityBlockOfferings"] == []
    assert (bought["ReservationType"], bought["State"], bought["InstanceMatchCriteria"]) == (
        "capacity-block", "scheduled", "targeted")  # fmt: skip


def test_adapted_an_offering_of_hours_and_minutes_is_answered_to_its_days_and_other_durations_are_refused(aws):
    from gpupilot.localcloud.reservations import ReservationBook
    from gpupilot.localcloud.world import World

    # Given a block that begins today and ends in 47 h 15 min (EC2's blocks end at 11:30 UTC)
    world = World.model_validate(
        {"capacity_block_offerings": [{"instance_type": "p5.48xlarge", "hours": 47.25, "upfront_usd": 900}]}
    )
    with adapted_moto(reservations=ReservationBook(world)):
        ec2 = boto3.client("ec2", region_name=REGION)
        # When two days are asked for, then 47 hours
        [offering] = ec2.describe_capacity_block_offerings(CapacityDurationHours=48)["CapacityBlockOfferings"]
        with pytest.raises(ClientError) as refused:
            ec2.describe_capacity_block_offerings(CapacityDurationHours=47)

    # Then the offering says its hours and minutes, and a duration that is not whole days is refused, as EC2 does
    assert (offering["CapacityBlockDurationHours"], offering["CapacityBlockDurationMinutes"]) == (47, 15)
    assert refused.value.response["Error"]["Code"] == "InvalidParameterValue"


def test_adapted_a_reservation_has_its_platform_and_tenancy_and_takes_only_launches_that_match_them(aws):
    from gpupilot.localcloud.reservations import ReservationBook

    # Given an open Windows reservation and an open dedicated one of g5.xlarge
    book = ReservationBook(reservation_world({"platform": "Windows"}, {"tenancy": "dedicated"}))
    windows, dedicated = list(book.reservations.values())[1:]
    with adapted_moto(reservations=book):
        described = boto3.client("ec2", region_name=REGION).describe_capacity_reservations()["CapacityReservations"]
        by_id = {r["CapacityReservationId"]: r for r in described}
        # When the fleet launches three Linux g5.xlarge of default tenancy into open reservations
        landed = []
        for number in range(3):
            landed.append(book.launch_into(None, "g5.xlarge", "us-east-1a", REGION))
            if landed[-1] is not None:
                book.hold(landed[-1], f"i-{number}")

    # Then EC2 describes each with its platform and tenancy, and only the Linux one of default tenancy takes them (two:
    # its size), the third launch running outside any reservation
    assert by_id[windows.reservation_id]["InstancePlatform"] == "Windows"
    assert by_id[dedicated.reservation_id]["Tenancy"] == "dedicated"
    linux = next(iter(book.reservations))
    assert [h.reservation_id if h else None for h in landed] == [linux, linux, None]


def test_moto_alone_describes_a_launch_template_version_as_created_and_adapted_with_ec2s_response_fields(aws):
    from functions.shared.adapters.reservations import request_fields

    # Given a launch template with metadata options and an IPv6 network interface
    data = {
        "MetadataOptions": {"HttpTokens": "required", "HttpPutResponseHopLimit": 1},
        "NetworkInterfaces": [{"DeviceIndex": 0, "Ipv6Addresses": [{"Ipv6Address": "2600:1f18::1"}]}],
    }
    ec2 = boto3.client("ec2", region_name=REGION)
    ec2.create_launch_template(LaunchTemplateName="base", LaunchTemplateData=data)

    def described() -> dict[str, Any]:
        versions = ec2.describe_launch_template_versions(LaunchTemplateName="base", Versions=["1"])
        return dict(versions["LaunchTemplateVersions"][0]["LaunchTemplateData"])

    alone = described()
    with adapted_moto():
        adapted = described()
        # When each is copied into a new template as described / Then botocore refuses EC2's response-only fields
        ec2.create_launch_template(LaunchTemplateName="copy-alone", LaunchTemplateData=alone)
        with pytest.raises(Exception, match=r"Unknown parameter in LaunchTemplateData"):
            ec2.create_launch_template(LaunchTemplateName="copy-adapted", LaunchTemplateData=adapted)
        # And the request's own fields of it are taken
        shape = ec2.meta.service_model.operation_model("CreateLaunchTemplate").input_shape
        ec2.create_launch_template(
            LaunchTemplateName="copy", LaunchTemplateData=request_fields(adapted, shape.members["LaunchTemplateData"])
        )

    # And moto alone answers as created; adapted, with MetadataOptions.State, Operator and IsPrimaryIpv6
    assert "State" not in alone["MetadataOptions"]
    assert adapted["MetadataOptions"]["State"] == "applied" and adapted["Operator"]["Managed"] is False
    assert adapted["NetworkInterfaces"][0]["Ipv6Addresses"][0]["IsPrimaryIpv6"] is False


def test_moto_alone_describes_every_type_in_every_region_and_adapted_a_region_describes_what_it_sells(aws):
    def described(region: str) -> set[str]:
        pages = (
            boto3.client("ec2", region_name=region)
            .get_paginator("describe_instance_types")
            .paginate(Filters=[{"Name": "instance-type", "Values": ["g6e.*"]}])
        )
        return {t["InstanceType"] for page in pages for t in page["InstanceTypes"]}

    # Given moto alone: g6e.xlarge is described at home and in us-west-2
    assert "g6e.xlarge" in described(REGION) and "g6e.xlarge" in described("us-west-2")
    # When home does not sell it / Then home does not describe it, and us-west-2 still does
    with adapted_moto(unsold={REGION: {"g6e.xlarge"}}):
        assert "g6e.xlarge" not in described(REGION) and "g6e.xlarge" in described("us-west-2")


# -- DynamoDB: one write at a time ---------------------------------------------------------------------------------
def racing_writes(dynamodb: Any, b_waits_seconds: float) -> int:
    """Writer A (rank to 1 if below 1) pauses once its condition has held; writer B (rank to 5 if below 5) writes
    meanwhile, waited for up to `b_waits_seconds`; then A goes on. The rank left."""
    import threading
    from unittest import mock

    from moto.dynamodb import models

    dynamodb.put_item(TableName="ranks", Item={"pk": {"S": "job"}, "rank": {"N": "0"}})
    execute = models.UpdateExpressionExecutor.execute
    paused, go = threading.Event(), threading.Event()

    def pause_the_first(executor: Any, *args: Any, **kwargs: Any) -> Any:
        if not paused.is_set():
            paused.set()
            go.wait(60)
        return execute(executor, *args, **kwargs)

    def to(rank: int) -> None:
        dynamodb.update_item(
            TableName="ranks", Key={"pk": {"S": "job"}}, UpdateExpression="SET #r = :r", ConditionExpression="#r < :r",
            ExpressionAttributeNames={"#r": "rank"}, ExpressionAttributeValues={":r": {"N": str(rank)}},
        )  # fmt: skip

    with mock.patch.object(models.UpdateExpressionExecutor, "execute", pause_the_first):
        first = threading.Thread(target=to, args=(1,))
        first.start()
        assert paused.wait(60)
        second = threading.Thread(target=to, args=(5,))
        second.start()
        second.join(b_waits_seconds)
        go.set()
        first.join(60)
        second.join(60)
    return int(dynamodb.get_item(TableName="ranks", Key={"pk": {"S": "job"}})["Item"]["rank"]["N"])


def test_moto_alone_lets_a_write_undo_one_made_after_its_condition_held_and_adapted_each_write_waits_its_turn(aws):
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    dynamodb.create_table(
        TableName="ranks", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST",
    )  # fmt: skip
    # moto alone: B writes while A is between its condition and its write (B is waited for until it has), and A then
    # puts the rank back below B's: a status moved backwards
    assert racing_writes(dynamodb, b_waits_seconds=60) == 1
    # Adapted: B waits for A's write (its join gives up after a second: B cannot end while A holds the lock), then
    # finds its own condition true of what A wrote
    with adapted_moto():
        assert racing_writes(dynamodb, b_waits_seconds=1) == 5


def test_moto_alone_has_no_consumable_resources_and_adapted_batch_keeps_them_and_the_definitions_naming_them(aws):
    batch = boto3.client("batch", region_name=REGION)
    # Given moto alone / Then it does not know consumable resources
    with pytest.raises(Exception):  # noqa: B017 (moto answers an unknown Batch operation in its own way)
        batch.create_consumable_resource(consumableResourceName="team-gpus", totalQuantity=2)
    submitted: list[Any] = []
    with adapted_moto(on_job_submitted=submitted.append, lifecycle=ComputeEnvironmentLifecycle(create_seconds=0)):
        create_queue(create_environment(aws))
        # When a resource is made, and a definition names it
        made = batch.create_consumable_resource(consumableResourceName="team-gpus", totalQuantity=2)
        needs = {"consumableResourceList": [{"consumableResource": made["consumableResourceArn"], "quantity": 1}]}
        definition = batch.register_job_definition(
            jobDefinitionName="d", type="container", consumableResourceProperties=needs,
            containerProperties={"image": "i", "vcpus": 1, "memory": 512},
        )["jobDefinitionArn"]  # fmt: skip
        batch.submit_job(jobName="capped", jobQueue="gpu-queue", jobDefinition=definition)
        described = batch.describe_consumable_resource(consumableResource="team-gpus")
        listed = batch.list_jobs_by_consumable_resource(consumableResource=made["consumableResourceArn"])["jobs"]
        # Then Batch describes it, keeps the definition's needs and lists the job that draws it; a definition naming
        # a resource Batch does not know, a name taken twice and an unknown resource are ClientExceptions
        assert (described["totalQuantity"], described["inUseQuantity"], described["availableQuantity"]) == (2, 0, 2)
        assert described["resourceType"] == "REPLENISHABLE"
        assert [(job["jobName"], job["quantity"]) for job in listed] == [("capped", 1)]
        kept = batch.describe_job_definitions(jobDefinitions=[definition])["jobDefinitions"][0]
        assert kept["consumableResourceProperties"] == needs
        unknown = {"consumableResourceList": [{"consumableResource": "nope", "quantity": 1}]}
        refusals = [
            lambda: batch.register_job_definition(
                jobDefinitionName="e",
                type="container",
                consumableResourceProperties=unknown,
                containerProperties={"image": "i", "vcpus": 1, "memory": 512},
            ),
            lambda: batch.create_consumable_resource(consumableResourceName="team-gpus", totalQuantity=1),
            lambda: batch.describe_consumable_resource(consumableResource="nope"),
        ]
        for refused in refusals:
            with pytest.raises(ClientError) as error:
                refused()
            assert error.value.response["Error"]["Code"] == "ClientException"


def test_moto_alone_cannot_filter_instances_by_lifecycle_and_adapted_finds_the_spot_ones(aws):
    # Given one spot and one on-demand instance
    ec2 = boto3.client("ec2", region_name=REGION)
    launch = {"ImageId": "ami-12c6146b", "MinCount": 1, "MaxCount": 1, "SubnetId": aws["subnet"]}
    spot = ec2.run_instances(**launch, InstanceMarketOptions={"MarketType": "spot"})["Instances"][0]["InstanceId"]
    ec2.run_instances(**launch)
    by_lifecycle = [{"Name": "instance-lifecycle", "Values": ["spot"]}]

    def described() -> list[str]:
        pages = ec2.get_paginator("describe_instances").paginate(Filters=by_lifecycle)
        return [i["InstanceId"] for page in pages for r in page["Reservations"] for i in r["Instances"]]

    # When they are described by lifecycle / Then moto alone raises, adapted answers the spot one only
    with pytest.raises(NotImplementedError, match="instance-lifecycle"):
        described()
    with adapted_moto():
        assert described() == [spot]
