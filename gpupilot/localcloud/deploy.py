"""Deploy into the embedded cloud what the synthesized stack declares, read from the template itself.

The table's keys and indexes, the roles, the VPC's subnets (in the world's zones), the security group,
the instance profile, the launch template, the queues, the Lambdas with the environment the template
gives each of them, the state machine's ASL and substitutions, the event rules and the alarms all
come from `cdk.out/GpuPilot.template.json`: the local cloud and the deployed stack cannot drift.
"""

from __future__ import annotations

import dataclasses
import io
import json
import zipfile
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from functions.shared import constants as c
from gpupilot.localcloud.dispatch import LocalFunction
from gpupilot.localcloud.iam import Statement, statements_of
from gpupilot.localcloud.template import DeployError, Resolver, handler_keys, resources_of

ACCOUNT_ID = "123456789012"
TABLE_NAME = "gpupilot-jobs"
__all__ = ["ACCOUNT_ID", "DeployError", "Deployment", "EventRule", "RegionDeployment", "deploy", "deploy_region"]


class EventRule(BaseModel):
    """An EventBridge rule of the stack: its pattern (or schedule) and the functions it targets."""

    name: str
    pattern: dict[str, Any] | None = None
    schedule: str | None = None
    targets: list[str] = Field(default_factory=list)
    forward_to: list[str] = Field(default_factory=list, description="Event buses (ARNs) it forwards matches to")


class RegionDeployment(BaseModel):
    """What a capacity region's stack created locally, in its region."""

    region: str
    subnets: list[str]
    security_groups: list[str]
    instance_profile_arn: str
    launch_template_name: str
    network_parameter: str
    event_rules: list[EventRule]
    instance_profile_roles: dict[str, list[str]] = Field(default_factory=dict)


class Deployment(BaseModel):
    """What was created locally, by name and ARN, and each function's IAM policy as the template declares it."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    table_name: str
    state_machine_arn: str
    functions: dict[str, LocalFunction]
    subnets: list[str]
    security_groups: list[str]
    instance_profile_arn: str
    launch_template_name: str
    alarm_topic_arn: str
    alarms: list[str]
    event_rules: list[EventRule]
    policies: dict[str, list[Statement]] = Field(default_factory=dict)
    instance_profile_roles: dict[str, list[str]] = Field(default_factory=dict)
    regions: dict[str, RegionDeployment] = Field(default_factory=dict, description="The capacity regions' stacks")

    def environment(self, key: str) -> dict[str, str]:
        """The environment the template gives function `key`."""
        return dict(self.functions[key].environment)


def _dummy_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("README.txt", "GPU Pilot local cloud: handlers run in-process from functions/.")
    return buffer.getvalue()


def _local_name(logical: str, limit: int = 64) -> str:
    return f"gpupilot-{logical}"[:limit]


def deploy(session: Any, template: dict[str, Any], zones: list[str], region: str = "us-east-1") -> Deployment:
    """Create the stack's resources in the embedded cloud reached by `session`."""
    resolve = Resolver(region, ACCOUNT_ID)
    table_logical, table = next(iter(resources_of(template, "AWS::DynamoDB::Table").items()))
    ddb = session.client("dynamodb")
    described = ddb.create_table(
        TableName=TABLE_NAME,
        KeySchema=table["KeySchema"],
        AttributeDefinitions=table["AttributeDefinitions"],
        GlobalSecondaryIndexes=table.get("GlobalSecondaryIndexes", []),
        BillingMode=table["BillingMode"],
    )["TableDescription"]
    if "TimeToLiveSpecification" in table:
        ddb.update_time_to_live(TableName=TABLE_NAME, TimeToLiveSpecification=table["TimeToLiveSpecification"])
    resolve.add(table_logical, TABLE_NAME, Arn=described["TableArn"])

    profile_roles = _roles(session.client("iam"), template, resolve)
    _consumable_resources(session.client("batch"), template)
    subnets, security_groups = _network(session.client("ec2"), template, zones, resolve)
    launch_template_name = _launch_template(session.client("ec2"), template, resolve)

    sqs = session.client("sqs")
    queue_arns: dict[str, str] = {}
    for logical in resources_of(template, "AWS::SQS::Queue"):
        url = sqs.create_queue(QueueName=_local_name(logical, 80))["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        resolve.add(logical, url, Arn=arn, QueueName=_local_name(logical, 80))
        queue_arns[arn] = url
    topic_arn = session.client("sns").create_topic(Name="gpupilot-alarms")["TopicArn"]
    for logical in resources_of(template, "AWS::SNS::Topic"):
        resolve.add(logical, topic_arn, TopicName="gpupilot-alarms")

    # The hosts bucket (stacks/hosts.py): where checkpoints are kept, named by the submit function's environment.
    s3 = session.client("s3")
    for logical, props in resources_of(template, "AWS::S3::Bucket").items():
        name = str(resolve(props["BucketName"], f"bucket {logical}"))
        where = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
        s3.create_bucket(Bucket=name, **where)
        resolve.add(logical, name, Arn=f"arn:aws:s3:::{name}")

    created = _functions(session.client("lambda"), template, resolve)
    state_machine_arn = _state_machine(session.client("stepfunctions"), template, resolve)
    failure_queues = {
        resolve(props["FunctionName"]): queue_arns.get(
            str(resolve(props["DestinationConfig"]["OnFailure"]["Destination"]))
        )
        for props in resources_of(template, "AWS::Lambda::EventInvokeConfig").values()
        if (props.get("DestinationConfig") or {}).get("OnFailure")
    }
    functions: dict[str, LocalFunction] = {}
    for logical, function in created.items():
        # Resolved now that everything a function's environment names (the state machine too) exists.
        variables = resources_of(template, "AWS::Lambda::Function")[logical].get("Environment") or {}
        environment = {
            name: str(resolve(value, f"{function.key} environment {name}"))
            for name, value in (variables.get("Variables") or {}).items()
        }
        session.client("lambda").update_function_configuration(
            FunctionName=function.name, Environment={"Variables": environment}
        )
        functions[logical] = dataclasses.replace(
            function, environment=environment, failure_queue_url=failure_queues.get(function.name)
        )

    return Deployment(
        table_name=TABLE_NAME,
        state_machine_arn=state_machine_arn,
        functions={function.key: function for function in functions.values()},
        subnets=subnets,
        security_groups=security_groups,
        instance_profile_arn=next(iter(profile_roles)),
        launch_template_name=launch_template_name,
        alarm_topic_arn=topic_arn,
        alarms=_put_alarms(session.client("cloudwatch"), template, resolve),
        event_rules=_event_rules(session.client("events"), template, resolve, functions),
        policies=_policies(template, resolve, functions),
        instance_profile_roles=profile_roles,
    )


def deploy_region(session: Any, template: dict[str, Any], zones: list[str], region: str) -> RegionDeployment:
    """Create a capacity region's stack in region `region` of the embedded cloud: its roles and instance profile
    (IAM is global: named apart from the home stack's), network, launch template, dead-letter queue, the parameter
    naming its network, and its forwarding rules (created in that region's EventBridge, with their targets)."""
    resolve = Resolver(region, ACCOUNT_ID)
    profile_roles = _roles(session.client("iam"), template, resolve, prefix=f"gpupilot-{region}-")
    _consumable_resources(session.client("batch", region_name=region), template)
    ec2 = session.client("ec2", region_name=region)
    subnets, security_groups = _network(ec2, template, zones, resolve)
    launch_template_name = _launch_template(ec2, template, resolve)
    sqs = session.client("sqs", region_name=region)
    for logical in resources_of(template, "AWS::SQS::Queue"):
        name = _local_name(f"{region}-{logical}", 80)
        url = sqs.create_queue(QueueName=name)["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        resolve.add(logical, url, Arn=arn, QueueName=name)
    ssm = session.client("ssm", region_name=region)
    parameter = ""
    for logical, props in resources_of(template, "AWS::SSM::Parameter").items():
        parameter = str(props["Name"])
        ssm.put_parameter(Name=parameter, Value=str(resolve(props["Value"], logical)), Type="String", Overwrite=True)
        resolve.add(logical, parameter)
    events = session.client("events", region_name=region)
    rules = []
    for logical, props in resources_of(template, "AWS::Events::Rule").items():
        targets = [t for t in props.get("Targets", []) if ":event-bus/" in str(resolve(t["Arn"], logical))]
        rule = EventRule(
            name=_local_name(logical),
            pattern=props.get("EventPattern"),
            forward_to=[str(resolve(t["Arn"], logical)) for t in targets],
        )
        events.put_rule(Name=rule.name, EventPattern=json.dumps(rule.pattern), State="ENABLED")
        events.put_targets(
            Rule=rule.name,
            Targets=[{"Id": t["Id"], "Arn": str(resolve(t["Arn"])), "RoleArn": str(resolve(t["RoleArn"]))}
                     for t in targets],
        )  # fmt: skip
        rules.append(rule)
    return RegionDeployment(
        region=region,
        subnets=subnets,
        security_groups=security_groups,
        instance_profile_arn=next(iter(profile_roles)),
        launch_template_name=launch_template_name,
        network_parameter=parameter,
        event_rules=rules,
        instance_profile_roles=profile_roles,
    )


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
