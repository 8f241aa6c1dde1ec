"""Each kind of resource the synthesized template declares, created in the embedded cloud as the template says:
roles and their policies, the network, the launch template, the functions, the state machine, the event rules, the
alarms and the teams' consumable resources."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

from functions.shared import constants as c
from gpupilot.localcloud.deployment import EventRule
from gpupilot.localcloud.dispatch import LocalFunction
from gpupilot.localcloud.iam import Statement, statements_of
from gpupilot.localcloud.template import DeployError, Resolver, handler_keys, resources_of


def _dummy_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("README.txt", "GPU Pilot local cloud: handlers run in-process from functions/.")
    return buffer.getvalue()


def _local_name(logical: str, limit: int = 64) -> str:
    return f"gpupilot-{logical}"[:limit]


def _consumable_resources(batch: Any, template: dict[str, Any]) -> None:
    """The teams' GPU caps: a Batch consumable resource per capped team, as the stack declares them; and the teams'
    fair-share scheduling policy, when they share pools by weight."""
    for props in resources_of(template, "AWS::Batch::ConsumableResource").values():
        batch.create_consumable_resource(
            consumableResourceName=props["ConsumableResourceName"],
            totalQuantity=int(props["TotalQuantity"]),
            resourceType=props.get("ResourceType", "REPLENISHABLE"),
        )
    for props in resources_of(template, "AWS::Batch::SchedulingPolicy").values():
        policy = props.get("FairsharePolicy") or {}
        batch.create_scheduling_policy(
            name=props["Name"],
            fairsharePolicy={
                "shareDecaySeconds": int(policy.get("ShareDecaySeconds", 0)),
                "computeReservation": int(policy.get("ComputeReservation", 0)),
                "shareDistribution": [
                    {"shareIdentifier": share["ShareIdentifier"], "weightFactor": float(share["WeightFactor"])}
                    for share in policy.get("ShareDistribution") or []
                ],
            },
        )


def _roles(iam: Any, template: dict[str, Any], resolve: Resolver, prefix: str = "gpupilot-") -> dict[str, list[str]]:
    """The stack's roles (named as the template names them, else after their logical id) and instance profiles;
    each instance profile's ARN -> its roles' ARNs."""
    for logical, props in resources_of(template, "AWS::IAM::Role").items():
        role = iam.create_role(
            RoleName=props.get("RoleName") or f"{prefix}{logical}"[:64],
            AssumeRolePolicyDocument=json.dumps(resolve(props["AssumeRolePolicyDocument"], logical)),
        )["Role"]
        resolve.add(logical, role["RoleName"], Arn=role["Arn"])
    profile_roles: dict[str, list[str]] = {}
    for logical, props in resources_of(template, "AWS::IAM::InstanceProfile").items():
        profile = iam.create_instance_profile(InstanceProfileName=f"{prefix}{logical}"[:128])["InstanceProfile"]
        profile_roles[profile["Arn"]] = []
        for role_name in resolve(props.get("Roles", []), logical):
            iam.add_role_to_instance_profile(InstanceProfileName=profile["InstanceProfileName"], RoleName=role_name)
            profile_roles[profile["Arn"]].append(iam.get_role(RoleName=role_name)["Role"]["Arn"])
        resolve.add(logical, profile["InstanceProfileName"], Arn=profile["Arn"])
    return profile_roles


def _policies(
    template: dict[str, Any], resolve: Resolver, functions: dict[str, LocalFunction]
) -> dict[str, list[Statement]]:
    """Each function's IAM policy statements, as the template attaches them to its role."""
    declared = resources_of(template, "AWS::Lambda::Function")
    role_of = {declared[logical]["Role"]["Fn::GetAtt"][0]: spec.key for logical, spec in functions.items()}
    policies: dict[str, list[Statement]] = {spec.key: [] for spec in functions.values()}

    def lenient(value: Any) -> Any:
        try:
            return resolve(value)
        except DeployError:
            return f"unresolved:{json.dumps(value)}"  # a resource the local cloud lacks: matches no call

    for props in resources_of(template, "AWS::IAM::Policy").values():
        for role in props.get("Roles", []):
            key = role_of.get(role.get("Ref", ""))
            if key is not None:
                policies[key].extend(statements_of(props["PolicyDocument"], lenient))
    return policies


def _network(ec2: Any, template: dict[str, Any], zones: list[str], resolve: Resolver) -> tuple[list[str], list[str]]:
    """The VPC and its subnets, the template's zones mapped in order onto the world's."""
    for logical, props in resources_of(template, "AWS::EC2::VPC").items():
        resolve.add(logical, ec2.create_vpc(CidrBlock=props["CidrBlock"])["Vpc"]["VpcId"])
    declared = resources_of(template, "AWS::EC2::Subnet")
    template_zones = sorted({str(props["AvailabilityZone"]) for props in declared.values()})
    subnets = []
    for logical, props in declared.items():
        zone = zones[template_zones.index(str(props["AvailabilityZone"])) % len(zones)]
        subnet = ec2.create_subnet(VpcId=resolve(props["VpcId"]), CidrBlock=props["CidrBlock"], AvailabilityZone=zone)
        resolve.add(logical, subnet["Subnet"]["SubnetId"])
        subnets.append(subnet["Subnet"]["SubnetId"])
    groups = []
    for logical, props in resources_of(template, "AWS::EC2::SecurityGroup").items():
        group = ec2.create_security_group(
            GroupName=_local_name(logical, 255), Description=props["GroupDescription"], VpcId=resolve(props["VpcId"])
        )["GroupId"]
        resolve.add(logical, group, GroupId=group)
        groups.append(group)
    return subnets, groups


def _launch_template(ec2: Any, template: dict[str, Any], resolve: Resolver) -> str:
    logical, launch_template = next(iter(resources_of(template, "AWS::EC2::LaunchTemplate").items()))
    name = launch_template.get("LaunchTemplateName", "gpupilot-gpu")
    data = dict(launch_template["LaunchTemplateData"])
    allowed = {"UserData", "MetadataOptions", "BlockDeviceMappings"}
    created = ec2.create_launch_template(
        LaunchTemplateName=name, LaunchTemplateData={k: resolve(v, logical) for k, v in data.items() if k in allowed}
    )["LaunchTemplate"]
    resolve.add(logical, created["LaunchTemplateId"], LaunchTemplateName=name)
    return str(name)


def _functions(awslambda: Any, template: dict[str, Any], resolve: Resolver) -> dict[str, LocalFunction]:
    declared = resources_of(template, "AWS::Lambda::Function")
    functions: dict[str, LocalFunction] = {}
    for logical, key in handler_keys(template).items():
        spec = c.LAMBDAS_BY_KEY[key]
        props = declared[logical]
        created = awslambda.create_function(
            FunctionName=c.function_name("gpupilot", key),
            Runtime=props.get("Runtime", "python3.11"),
            Role=resolve(props["Role"], logical),
            Handler=props["Handler"],
            Code={"ZipFile": _dummy_zip()},
            Timeout=spec.timeout_seconds,
            MemorySize=spec.memory_mb,
        )
        resolve.add(logical, created["FunctionName"], Arn=created["FunctionArn"])
        functions[logical] = LocalFunction(
            key=key,
            name=created["FunctionName"],
            arn=created["FunctionArn"],
            handler=props["Handler"],
            environment={},
            timeout_seconds=int(props.get("Timeout", spec.timeout_seconds)),
        )
    missing = {spec.key for spec in c.LAMBDAS} - {f.key for f in functions.values()}
    if missing:
        raise DeployError(f"the template declares no function for {sorted(missing)}")
    return functions


def _state_machine(sfn: Any, template: dict[str, Any], resolve: Resolver) -> str:
    logical, props = next(iter(resources_of(template, "AWS::StepFunctions::StateMachine").items()))
    definition = str(resolve(props["DefinitionString"], logical))
    for name, value in (props.get("DefinitionSubstitutions") or {}).items():
        definition = definition.replace("${" + name + "}", str(resolve(value, f"substitution {name}")))
    if "${" in definition:
        raise DeployError("the state machine definition has unresolved ${...} substitutions")
    role = resolve(props["RoleArn"], logical)
    arn = str(
        sfn.create_state_machine(name=c.STATE_MACHINE_NAME, definition=definition, roleArn=role)["stateMachineArn"]
    )
    resolve.add(logical, arn, Arn=arn, Name=c.STATE_MACHINE_NAME)
    return arn


def _event_rules(
    events: Any, template: dict[str, Any], resolve: Resolver, functions: dict[str, LocalFunction]
) -> list[EventRule]:
    """Pattern rules are created (schedules are fired by the local cloud: a schedule rule with a Lambda
    target breaks moto's PutEvents); both keep their targets, so delivery follows the template."""
    by_arn = {spec.arn: spec.key for spec in functions.values()}
    rules = []
    for logical, props in resources_of(template, "AWS::Events::Rule").items():
        targets = [by_arn[str(resolve(t["Arn"]))] for t in props.get("Targets", []) if resolve(t["Arn"]) in by_arn]
        rule = EventRule(
            name=_local_name(logical),
            pattern=props.get("EventPattern"),
            schedule=props.get("ScheduleExpression"),
            targets=targets,
        )
        if rule.pattern is not None:
            events.put_rule(Name=rule.name, EventPattern=json.dumps(rule.pattern), State="ENABLED")
        rules.append(rule)
    return rules


def _put_alarms(cloudwatch: Any, template: dict[str, Any], resolve: Resolver) -> list[str]:
    """The stack's alarms on GPU Pilot's own metrics (those on AWS-owned metrics need real resources)."""
    names = []
    for props in resources_of(template, "AWS::CloudWatch::Alarm").values():
        if props.get("Namespace") != c.METRICS_NAMESPACE or not resolve.resolvable(props.get("Dimensions", [])):
            continue
        name = props.get("AlarmName") or f"gpupilot-{props['MetricName']}"
        cloudwatch.put_metric_alarm(
            AlarmName=name,
            MetricName=props["MetricName"],
            Namespace=props["Namespace"],
            Statistic=props.get("Statistic", "Sum"),
            Period=int(props.get("Period", 300)),
            EvaluationPeriods=int(props.get("EvaluationPeriods", 1)),
            Threshold=float(props["Threshold"]),
            ComparisonOperator=props["ComparisonOperator"],
            Dimensions=resolve(props.get("Dimensions", [])),
            AlarmActions=[str(resolve(a)) for a in props.get("AlarmActions", []) if resolve.resolvable(a)],
            TreatMissingData=props.get("TreatMissingData", "notBreaching"),
        )
        names.append(name)
    return names
