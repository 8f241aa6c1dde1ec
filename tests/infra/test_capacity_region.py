"""A deployment with a capacity region besides home: the app synthesizes a stack of its own for that region (network,
launch template, instance role and profile, its network in an SSM parameter, Batch events forwarded to the home bus),
which passes cdk-nag, cfn-lint and checkov like the home stack, and the home stack's functions are granted that
region's ARNs by name."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from app import build_app, load_context
from functions.shared.constants import (
    ENV_CAPACITY_REGIONS,
    ENV_REGION_PARAMETER,
    REGION_PARAMETER,
    REGION_STACK_PREFIX,
    STACK_NAME,
)
from stacks.nag import NAG_NAMESPACE, SERVERLESS_NAMESPACE
from tests.infra.test_checkov import SCAN_TIMEOUT_SECONDS, checkov_or_skip

HOME, WEST = "us-east-1", "us-west-2"
WEST_ZONES = [f"{WEST}a", f"{WEST}c"]
WEST_STACK = f"{REGION_STACK_PREFIX}{WEST}"
HOME_BUS = ["arn:", {"Ref": "AWS::Partition"}, f":events:{HOME}:", {"Ref": "AWS::AccountId"}, ":event-bus/default"]
# cfn-lint findings each template may have, and why they are not defects.
CFN_LINT_ACCEPTED = {
    # The zones are the deployment's choice (context `zones`, `region_zones`): where the GPU types are offered.
    "W3010": "availability zones named on purpose",
    # CDK writes DependsOn beside a GetAtt on some of its own resources.
    "W3005": "CDK's own redundant DependsOn",
}
# cfn-lint reads the state machine's ARN pattern before CloudFormation substitutes ${Partition} in it.
HOME_CFN_LINT_ACCEPTED = CFN_LINT_ACCEPTED | {"E3601": "a ${Partition} substitution in the ASL's Resource ARN"}


@dataclass
class RegionApp:
    outdir: Path
    home: dict[str, Any]
    west: dict[str, Any]
    report: dict[str, Any]
    stack_regions: dict[str, str]

    def west_of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {lid: r for lid, r in self.west["Resources"].items() if r["Type"] == resource_type}


@pytest.fixture(scope="module")
def two_regions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RegionApp]:
    # Given a deployment whose capacity regions are home us-east-1 and us-west-2 (zones a and c)
    root = tmp_path_factory.mktemp("regions")
    context = load_context() | {"regions": [HOME, WEST], "region_zones": {WEST: WEST_ZONES}}
    app, _ = build_app(context, outdir=root / "cdk.out", lambda_build_dir=root / "lambda")
    # When the app is synthesized, with cdk-nag's packs as validation plugins
    assembly = app.synth()
    outdir = root / "cdk.out"
    yield RegionApp(
        outdir=outdir,
        home=json.loads((outdir / f"{STACK_NAME}.template.json").read_text()),
        west=json.loads((outdir / f"{WEST_STACK}.template.json").read_text()),
        report=json.loads((outdir / "validation-report.json").read_text()),
        stack_regions={stack.stack_name: stack.environment.region for stack in assembly.stacks},
    )


def test_a_capacity_region_gets_a_stack_of_its_own_deployed_in_that_region(two_regions: RegionApp) -> None:
    # Then the app has the home stack and one more, for us-west-2, deployed there
    assert two_regions.stack_regions[WEST_STACK] == WEST
    assert set(two_regions.stack_regions) == {STACK_NAME, WEST_STACK}
    # And its GPU subnets are private, in the zones the deployment chose for that region
    private = [
        s["Properties"] for s in two_regions.west_of_type("AWS::EC2::Subnet").values()
        if not s["Properties"]["MapPublicIpOnLaunch"]
    ]  # fmt: skip
    assert sorted(s["AvailabilityZone"] for s in private) == WEST_ZONES
    # And it has the GPU launch template, a security group, and an instance role named for the region
    assert len(two_regions.west_of_type("AWS::EC2::LaunchTemplate")) == 1
    assert len(two_regions.west_of_type("AWS::EC2::SecurityGroup")) == 1
    [role] = [
        r["Properties"] for r in two_regions.west_of_type("AWS::IAM::Role").values()
        if r["Properties"].get("RoleName") == f"gpupilot-gpu-instance-{WEST}"
    ]  # fmt: skip
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "ec2.amazonaws.com"}
    assert len(two_regions.west_of_type("AWS::IAM::InstanceProfile")) == 1


def test_the_region_stack_publishes_its_network_in_an_ssm_parameter_for_the_home_functions(
    two_regions: RegionApp,
) -> None:
    # Then one parameter of the known name holds the subnets, security group, instance profile and launch template
    [parameter] = [p["Properties"] for p in two_regions.west_of_type("AWS::SSM::Parameter").values()]
    assert parameter["Name"] == REGION_PARAMETER
    value = json.dumps(parameter["Value"])
    for key in ("subnets", "security_groups", "instance_profile_arn", "launch_template_name"):
        assert key in value
    # And nothing in either stack is referenced across regions (each deploys on its own)
    assert "Fn::ImportValue" not in json.dumps(two_regions.home) + json.dumps(two_regions.west)


def test_the_region_forwards_gpu_pilots_batch_events_to_the_home_bus_with_a_role_that_may_only_put_them_there(
    two_regions: RegionApp,
) -> None:
    # Then one rule matches Batch's job and queue events of GPU Pilot's queues only, another EC2's spot signals
    rules = {r["Properties"]["EventPattern"]["source"][0]: r["Properties"]
             for r in two_regions.west_of_type("AWS::Events::Rule").values()}  # fmt: skip
    assert set(rules) == {"aws.batch", "aws.ec2"}
    rule, spot = rules["aws.batch"], rules["aws.ec2"]
    assert rule["EventPattern"]["detail"]["jobQueue"] == [{"wildcard": "arn:*:batch:*:*:job-queue/gpupilot-*"}]
    # And its target is the home region's default bus, with a dead-letter queue and a role
    [target] = rule["Targets"]
    assert target["Arn"] == {"Fn::Join": ["", HOME_BUS]}
    assert "DeadLetterConfig" in target
    role_id = target["RoleArn"]["Fn::GetAtt"][0]
    role = two_regions.west["Resources"][role_id]["Properties"]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "events.amazonaws.com"}
    # And the role may only put events on that bus
    statements = [
        statement
        for policy in two_regions.west_of_type("AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    assert statements == [{"Action": "events:PutEvents", "Effect": "Allow", "Resource": {"Fn::Join": ["", HOME_BUS]}}]
    # And EC2's interruption warnings and rebalance recommendations go the same way, with a role of their own that
    # may only do the same
    assert spot["EventPattern"]["detail-type"] == [
        "EC2 Spot Instance Interruption Warning", "EC2 Instance Rebalance Recommendation"
    ]  # fmt: skip
    [forwarded] = spot["Targets"]
    assert forwarded["Arn"] == target["Arn"] and "DeadLetterConfig" in forwarded
    spot_role = forwarded["RoleArn"]["Fn::GetAtt"][0]
    spot_statements = [
        statement
        for policy in two_regions.west_of_type("AWS::IAM::Policy").values()
        if {"Ref": spot_role} in policy["Properties"]["Roles"]
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    assert spot_statements == statements


def test_the_home_functions_are_granted_the_capacity_regions_arns_by_name(two_regions: RegionApp) -> None:
    # Then the grants name us-west-2's compute environments, its instance role and its network parameter
    granted = json.dumps(two_regions.home["Resources"])
    assert f":batch:{WEST}:" in granted and ":compute-environment/gpupilot" in granted
    assert f":ssm:{WEST}:" in granted and f"parameter{REGION_PARAMETER}" in granted
    assert f"gpupilot-gpu-instance-{WEST}" in granted
    # And never a wildcard region for Batch's resources
    assert ":batch:*:" not in granted.replace("arn:*:batch:*:*:job-queue", "")


def test_cdk_nag_finds_nothing_unacknowledged_in_either_stack(two_regions: RegionApp) -> None:
    # Then both of cdk-nag's packs concluded success over the app with the region stack
    reports = {r["pluginName"]: r for r in two_regions.report["pluginReports"]}
    for pack in (NAG_NAMESPACE, SERVERLESS_NAMESPACE):
        assert (reports[pack]["conclusion"], reports[pack]["violations"]) == ("success", [])


@pytest.mark.parametrize(("stack", "accepted"), [(WEST_STACK, CFN_LINT_ACCEPTED), (STACK_NAME, HOME_CFN_LINT_ACCEPTED)])
def test_cfn_lint_finds_no_error_in_the_region_stack_nor_the_home_stack(
    two_regions: RegionApp, stack: str, accepted: dict[str, str]
) -> None:
    # When cfn-lint reads the synthesized template
    template = two_regions.outdir / f"{stack}.template.json"
    command = [str(Path(sys.executable).parent / "cfn-lint"), "--format", "json", str(template)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=SCAN_TIMEOUT_SECONDS, check=False)
    # Then it finds nothing but what is accepted above, with its reason
    findings = {match["Rule"]["Id"] for match in json.loads(done.stdout)}
    assert findings - set(accepted) == set(), done.stdout[-4000:]


def test_checkov_finds_no_failing_check_in_the_region_stack(two_regions: RegionApp, tmp_path: Path) -> None:
    executable = checkov_or_skip()
    # When checkov scans the region stack's template
    command = [executable, "--framework", "cloudformation", "-o", "json", "--quiet", "--skip-download"]
    command += ["-f", str(two_regions.outdir / f"{WEST_STACK}.template.json")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=SCAN_TIMEOUT_SECONDS, check=False)
    # Then no check fails
    reports = json.loads(done.stdout)
    [cloudformation] = [r for r in (reports if isinstance(reports, list) else [reports])
                        if r.get("check_type") == "cloudformation"]  # fmt: skip
    assert cloudformation["summary"]["failed"] == 0, cloudformation["results"]["failed_checks"]


def test_every_home_function_knows_the_capacity_regions_and_those_that_build_pools_where_their_network_is(
    two_regions: RegionApp,
) -> None:
    # Then each function's environment names us-west-2; those that plan or build pools also the network parameter
    environments = {
        r["Properties"]["Handler"].split(".")[1]: r["Properties"].get("Environment", {}).get("Variables", {})
        for r in two_regions.home["Resources"].values()
        if r["Type"] == "AWS::Lambda::Function" and r["Properties"].get("Handler", "").startswith("functions.")
    }
    assert {name: env.get(ENV_CAPACITY_REGIONS) for name, env in environments.items()} == dict.fromkeys(
        environments, WEST
    )
    readers = {name for name, env in environments.items() if env.get(ENV_REGION_PARAMETER) == REGION_PARAMETER}
    assert readers == {"api", "select_gpu", "ensure_queue"}
