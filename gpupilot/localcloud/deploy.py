"""Deploy into the embedded cloud what the synthesized stack declares, read from the template itself.

The table's keys and indexes, the roles, the VPC's subnets (in the world's zones), the security group,
the instance profile, the launch template, the queues, the Lambdas with the environment the template
gives each of them, the state machine's ASL and substitutions, the event rules and the alarms all
come from `cdk.out/GpuPilot.template.json`: the local cloud and the deployed stack cannot drift.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from gpupilot.localcloud.deployment import ACCOUNT_ID, TABLE_NAME, Deployment, EventRule, RegionDeployment
from gpupilot.localcloud.dispatch import LocalFunction
from gpupilot.localcloud.stack_resources import (
    _consumable_resources,
    _event_rules,
    _functions,
    _launch_template,
    _local_name,
    _network,
    _policies,
    _put_alarms,
    _roles,
    _state_machine,
)
from gpupilot.localcloud.template import DeployError, Resolver, resources_of

__all__ = [
    "ACCOUNT_ID",
    "TABLE_NAME",
    "DeployError",
    "Deployment",
    "EventRule",
    "RegionDeployment",
    "deploy",
    "deploy_region",
]


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
