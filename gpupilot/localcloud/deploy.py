"""Deploy into the embedded cloud what the synthesized stack declares, read from the template itself.

The table's keys and indexes, the Lambdas' handlers, the state machine's ASL and its substitutions,
the Batch event pattern, the launch template's user data and the alarms all come from
`cdk.out/GpuPilot.template.json`, so the local cloud and the deployed stack cannot drift.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from functions.shared import constants as c

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = REPO_ROOT / "cdk.out" / f"{c.STACK_NAME}.template.json"
ACCOUNT_ID = "123456789012"
TABLE_NAME = "gpupilot-jobs"
MAX_VCPUS = 256


class DeployError(RuntimeError):
    pass


class Deployment(BaseModel):
    """What was created locally, by name and ARN."""

    table_name: str
    state_machine_arn: str
    functions: dict[str, str]  # key -> ARN
    handlers: dict[str, str]  # key -> handler path
    subnets: list[str]
    security_groups: list[str]
    instance_profile_arn: str
    launch_template_name: str
    alarm_topic_arn: str
    batch_service_role_arn: str
    alarms: list[str]

    def environment(self) -> dict[str, str]:
        """Environment every in-process handler runs with (the union of what the stack gives each)."""
        return {
            c.ENV_TABLE: self.table_name,
            c.ENV_STATE_MACHINE_ARN: self.state_machine_arn,
            c.ENV_SUBNETS: ",".join(self.subnets),
            c.ENV_SECURITY_GROUPS: ",".join(self.security_groups),
            c.ENV_INSTANCE_PROFILE_ARN: self.instance_profile_arn,
            c.ENV_LAUNCH_TEMPLATE_NAME: self.launch_template_name,
            c.ENV_MAX_VCPUS: str(MAX_VCPUS),
            c.ENV_RESOURCE_PREFIX: "gpupilot",
            c.ENV_BATCH_SERVICE_ROLE_ARN: self.batch_service_role_arn,
            "POWERTOOLS_SERVICE_NAME": c.SERVICE_NAME,
            "POWERTOOLS_METRICS_NAMESPACE": c.METRICS_NAMESPACE,
            "POWERTOOLS_LOG_LEVEL": "INFO",
        }


def template_path() -> Path:
    return Path(os.environ.get("GPUPILOT_TEMPLATE", TEMPLATE))


def load_template(synth_if_missing: bool = True) -> dict[str, Any]:
    """The synthesized stack template; synthesizes it (python app.py, needs node) when missing."""
    path = template_path()
    if not path.exists() and synth_if_missing:
        result = subprocess.run([sys.executable, "app.py"], cwd=REPO_ROOT, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise DeployError(f"could not synthesize the stack: {result.stderr.strip()[-500:]}")
    if not path.exists():
        raise DeployError(f"no synthesized template at {path}: run `make synth`")
    return dict(json.loads(path.read_text()))


def resources_of(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v["Properties"] for k, v in template["Resources"].items() if v["Type"] == kind}


def handler_keys(template: dict[str, Any]) -> dict[str, str]:
    """logical id -> LAMBDAS key, for the functions whose handler is one of ours."""
    by_handler = {spec.handler: spec.key for spec in c.LAMBDAS}
    return {
        logical: by_handler[props["Handler"]]
        for logical, props in resources_of(template, "AWS::Lambda::Function").items()
        if props.get("Handler") in by_handler
    }


def resolve(value: Any, refs: dict[str, str]) -> Any:
    """Resolve Ref / Fn::GetAtt(Arn) / Fn::Join / Fn::Base64 against locally created resources."""
    if isinstance(value, dict) and len(value) == 1:
        ((fn, arg),) = value.items()
        if fn == "Ref":
            return refs[arg]
        if fn == "Fn::GetAtt":
            return refs[arg[0]]
        if fn == "Fn::Join":
            return arg[0].join(str(resolve(part, refs)) for part in arg[1])
        if fn == "Fn::Base64":
            return base64.b64encode(str(resolve(arg, refs)).encode()).decode()
    return value


def _dummy_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("README.txt", "GPU Pilot local cloud: handlers run in-process from functions/.")
    return buffer.getvalue()


def deploy(session: Any, template: dict[str, Any], zones: list[str]) -> Deployment:
    """Create the stack's resources in the embedded cloud reached by `session`."""
    refs: dict[str, str] = {}
    table_logical, table = next(iter(resources_of(template, "AWS::DynamoDB::Table").items()))
    ddb = session.client("dynamodb")
    ddb.create_table(
        TableName=TABLE_NAME,
        KeySchema=table["KeySchema"],
        AttributeDefinitions=table["AttributeDefinitions"],
        GlobalSecondaryIndexes=table.get("GlobalSecondaryIndexes", []),
        BillingMode=table["BillingMode"],
    )
    if "TimeToLiveSpecification" in table:
        ddb.update_time_to_live(TableName=TABLE_NAME, TimeToLiveSpecification=table["TimeToLiveSpecification"])
    refs[table_logical] = TABLE_NAME

    iam = session.client("iam")
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
    role_arn = iam.create_role(RoleName="gpupilot-local", AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]

    awslambda = session.client("lambda")
    functions: dict[str, str] = {}
    handlers: dict[str, str] = {}
    lambda_props = resources_of(template, "AWS::Lambda::Function")
    for logical, key in handler_keys(template).items():
        spec = c.LAMBDAS_BY_KEY[key]
        created = awslambda.create_function(
            FunctionName=c.function_name("gpupilot", key),
            Runtime=lambda_props[logical].get("Runtime", "python3.11"),
            Role=role_arn,
            Handler=lambda_props[logical]["Handler"],
            Code={"ZipFile": _dummy_zip()},
            Timeout=spec.timeout_seconds,
            MemorySize=spec.memory_mb,
        )
        functions[key] = refs[logical] = created["FunctionArn"]
        handlers[key] = lambda_props[logical]["Handler"]
    missing = {spec.key for spec in c.LAMBDAS} - set(functions)
    if missing:
        raise DeployError(f"the template declares no function for {sorted(missing)}")

    ec2 = session.client("ec2")
    vpc_id = ec2.create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    subnets = [
        ec2.create_subnet(VpcId=vpc_id, CidrBlock=f"10.0.{index}.0/24", AvailabilityZone=zone)["Subnet"]["SubnetId"]
        for index, zone in enumerate(zones)
    ]
    security_group = ec2.create_security_group(
        GroupName="gpupilot-gpu-instances", Description="GPU instances (egress only)", VpcId=vpc_id
    )["GroupId"]
    instance_role = iam.create_role(
        RoleName="gpupilot-gpu-instance",
        AssumeRolePolicyDocument=json.dumps(trust).replace("lambda.amazonaws.com", "ec2.amazonaws.com"),
    )["Role"]["RoleName"]
    # moto's CreateComputeEnvironment requires a serviceRole; AWS falls back to the service-linked role.
    batch_role_arn = iam.create_role(
        RoleName="gpupilot-batch-service",
        AssumeRolePolicyDocument=json.dumps(trust).replace("lambda.amazonaws.com", "batch.amazonaws.com"),
    )["Role"]["Arn"]
    profile = iam.create_instance_profile(InstanceProfileName="gpupilot-gpu-instance")["InstanceProfile"]
    iam.add_role_to_instance_profile(InstanceProfileName="gpupilot-gpu-instance", RoleName=instance_role)

    launch_template = next(iter(resources_of(template, "AWS::EC2::LaunchTemplate").values()))
    template_name = launch_template.get("LaunchTemplateName", "gpupilot-gpu")
    data = dict(launch_template["LaunchTemplateData"])
    data["UserData"] = resolve(data.get("UserData", ""), refs)
    ec2.create_launch_template(LaunchTemplateName=template_name, LaunchTemplateData=_plain(data))

    sfn_props = next(iter(resources_of(template, "AWS::StepFunctions::StateMachine").values()))
    definition = resolve(sfn_props["DefinitionString"], refs)
    for name, value in (sfn_props.get("DefinitionSubstitutions") or {}).items():
        definition = definition.replace("${" + name + "}", str(resolve(value, refs)))
    if "${" in definition:
        raise DeployError("the state machine definition has unresolved ${...} substitutions")
    state_machine_arn = session.client("stepfunctions").create_state_machine(
        name=c.STATE_MACHINE_NAME, definition=definition, roleArn=role_arn, type="STANDARD"
    )["stateMachineArn"]

    topic_arn = session.client("sns").create_topic(Name="gpupilot-alarms")["TopicArn"]
    for logical in resources_of(template, "AWS::SNS::Topic"):
        refs[logical] = topic_arn

    events = session.client("events")
    for props in resources_of(template, "AWS::Events::Rule").values():
        pattern = props.get("EventPattern")
        if not pattern:
            continue  # schedules are driven by the local cloud itself (moto does not fire them)
        events.put_rule(Name="gpupilot-batch-events", EventPattern=json.dumps(pattern), State="ENABLED")

    alarms = _put_alarms(session.client("cloudwatch"), template, refs)
    return Deployment(
        table_name=TABLE_NAME,
        state_machine_arn=state_machine_arn,
        functions=functions,
        handlers=handlers,
        subnets=subnets,
        security_groups=[security_group],
        instance_profile_arn=profile["Arn"],
        launch_template_name=template_name,
        alarm_topic_arn=topic_arn,
        batch_service_role_arn=batch_role_arn,
        alarms=alarms,
    )


def _plain(data: dict[str, Any]) -> dict[str, Any]:
    """Launch template data without CloudFormation-only keys moto would reject."""
    allowed = {"UserData", "MetadataOptions", "BlockDeviceMappings", "TagSpecifications"}
    return {k: v for k, v in data.items() if k in allowed and not _has_intrinsic(v)} | {"UserData": data["UserData"]}


def _has_intrinsic(value: Any) -> bool:
    if isinstance(value, dict):
        return any(k.startswith("Fn::") or k == "Ref" or _has_intrinsic(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_intrinsic(v) for v in value)
    return False


def _put_alarms(cloudwatch: Any, template: dict[str, Any], refs: dict[str, str]) -> list[str]:
    """The stack's alarms on GPU Pilot's own metrics (those on AWS-owned metrics need real resources)."""
    names = []
    for _logical, props in resources_of(template, "AWS::CloudWatch::Alarm").items():
        if props.get("Namespace") != c.METRICS_NAMESPACE or _has_intrinsic(props.get("Dimensions", [])):
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
            Dimensions=props.get("Dimensions", []),
            AlarmActions=[str(resolve(a, refs)) for a in props.get("AlarmActions", []) if not _unresolvable(a, refs)],
            TreatMissingData=props.get("TreatMissingData", "notBreaching"),
        )
        names.append(name)
    return names


def _unresolvable(value: Any, refs: dict[str, str]) -> bool:
    try:
        resolve(value, refs)
    except KeyError:
        return True
    return False
