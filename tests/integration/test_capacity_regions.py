"""Capacity regions on moto: the home stack and each region's stack deployed from their synthesized templates, each
function's calls authorized against its role as AWS would, resource by resource including the region in the ARN.
A pool for a candidate in a capacity region is built there, on that region's network (read from its parameter);
a call into a region the deployment has no stack in is refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest
from moto import mock_aws

from functions.shared.adapters.batch import BatchPoolsAdapter
from functions.shared.adapters.clients import observe_calls, reset_clients, stop_observing
from functions.shared.adapters.job_store import DynamoJobStore
from functions.shared.adapters.regions import forget_networks
from functions.shared.adapters.wiring import reset_ports
from functions.shared.domain.requests.job_request import JobRequest
from gpupilot.localcloud.deploy import ACCOUNT_ID, RegionDeployment, deploy, deploy_region
from gpupilot.localcloud.dispatch import HandlerDispatcher
from gpupilot.localcloud.iam import IamEnforcer, enforcer_for
from gpupilot.localcloud.moto_adaptations import ComputeEnvironmentLifecycle, SpotMarket, adapted_moto
from gpupilot.localcloud.template import load_region_templates
from tests.integration.conftest import CREATE_SECONDS, MOTO_CONFIG, ZONES, Cloud, ManualClock
from tests.integration.test_iam_decisions import calling_as, refused

HOME, WEST, EU = "us-east-1", "us-west-2", "eu-west-1"
# The capacity regions of tests/e2e/test_regions.py's world: one synthesis serves both.
REGIONS = [WEST, EU]
JOB = "0123456789abcdef0123"
REQUEST: dict[str, Any] = {
    "name": "regional",
    "image": "nvidia/cuda:12.4.1-base-ubuntu22.04",
    "command": ["nvidia-smi", "-L"],
    "instance_types": ["g5.xlarge"],
}


@dataclass
class RegionalCloud:
    cloud: Cloud
    regions: dict[str, RegionDeployment]


@pytest.fixture
def regional() -> Iterator[RegionalCloud]:
    # Given the home stack and us-west-2's and eu-west-1's stacks, synthesized with those regions and deployed
    home_template, templates = load_region_templates(HOME, REGIONS)
    clock = ManualClock()
    dispatcher = HandlerDispatcher(metric_sink=lambda namespace, data: None)
    lifecycle = ComputeEnvironmentLifecycle(create_seconds=CREATE_SECONDS, clock=clock)
    spot_market = SpotMarket(offered=lambda instance_type: list(ZONES))
    with (
        mock_aws(config=MOTO_CONFIG),
        adapted_moto(dispatcher=dispatcher, lifecycle=lifecycle, spot_market=spot_market),
    ):
        session = boto3.session.Session()
        deployed = deploy(session, home_template, ZONES)
        regions = {r: deploy_region(session, templates[r], [f"{r}a", f"{r}b"], r) for r in REGIONS}
        deployed.regions = regions
        dispatcher.functions = dict(deployed.functions)
        profile_roles = dict(deployed.instance_profile_roles)
        for region in regions.values():
            profile_roles |= region.instance_profile_roles
        enforcer = enforcer_for(
            deployed.policies, profile_roles, HOME, ACCOUNT_ID, IamEnforcer.log_dir_from_environment()
        )
        observe_calls(enforcer)
        reset_clients()
        reset_ports()
        forget_networks()
        yield RegionalCloud(
            Cloud(deployment=deployed, clock=clock, lifecycle=lifecycle, dispatcher=dispatcher), regions
        )
        stop_observing(enforcer)
        reset_clients()
        reset_ports()
        forget_networks()


def test_a_candidate_in_a_capacity_region_gets_its_pool_there_on_that_regions_network(
    regional: RegionalCloud,
) -> None:
    # Given a job allowed us-west-2 only, selected there
    cloud, west = regional.cloud, regional.regions[WEST]
    request = REQUEST | {"regions": [WEST]}
    DynamoJobStore(cloud.deployment.table_name).create_job(JOB, JobRequest.model_validate(request))
    selection = cloud.invoke("select_gpu", {"job_id": JOB, "request": request})
    assert {candidate["region"] for candidate in selection["candidates"]} == {WEST}
    state = {"job_id": JOB, "request": request, "selection": selection}
    # When EnsureJobQueue runs, and again once Batch made the compute environment VALID
    first = cloud.invoke("ensure_queue", state)
    cloud.clock.advance()
    second = cloud.invoke("ensure_queue", state | {"previous": first})
    # Then the pool is us-west-2's: its compute environment on that region's subnets, security group and
    # instance profile (from the region stack's parameter), and its queue, ready
    assert second["ready"] is True
    batch = boto3.client("batch", region_name=WEST)
    [environment] = batch.describe_compute_environments()["computeEnvironments"]
    assert environment["computeEnvironmentArn"].split(":")[3] == WEST
    resources = environment["computeResources"]
    parameter = boto3.client("ssm", region_name=WEST).get_parameter(Name=west.network_parameter)["Parameter"]
    network = json.loads(parameter["Value"])
    assert sorted(resources["subnets"]) == sorted(network["subnets"]) and len(network["subnets"]) == 2
    assert set(network["subnets"]) <= set(west.subnets)
    assert resources["securityGroupIds"] == west.security_groups
    assert resources["instanceRole"] == west.instance_profile_arn
    assert [q["jobQueueName"] for q in batch.describe_job_queues()["jobQueues"]] == [second["job_queue"]]
    # And home's Batch has no pool at all
    assert boto3.client("batch", region_name=HOME).describe_compute_environments()["computeEnvironments"] == []


def test_a_function_may_not_act_in_a_region_the_deployment_has_no_stack_in(regional: RegionalCloud) -> None:
    # Given ensure_queue's role, granted Batch's resources in home, us-west-2 and eu-west-1 by name
    spec = {"computeEnvironmentName": "gpupilot-od-x8664-g5-xlarge", "type": "MANAGED", "state": "ENABLED"}
    with calling_as("ensure_queue"):
        # When it creates a compute environment in ap-south-1 / Then IAM refuses, naming that region's ARN
        message = refused(lambda: BatchPoolsAdapter(region="ap-south-1").create_compute_environment(spec))
    assert "batch:CreateComputeEnvironment" in message and ":batch:ap-south-1:" in message


def test_the_sweep_reads_each_capacity_regions_pools_with_that_regions_arns(regional: RegionalCloud) -> None:
    # Given / When the sweep runs (calling Batch, ECS and EC2 in every region of the deployment)
    report = regional.cloud.invoke("health_sweep", {})
    # Then it swept every region, none of its calls refused
    assert report["summary"]["regions"] == 1 + len(REGIONS)
