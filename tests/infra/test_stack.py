"""Properties of the synthesized GpuPilot template: what each resource guarantees, not how many exist."""

from __future__ import annotations

import base64
import binascii
import json
import re
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Match

from functions.shared.constants import (
    ASL_FILE,
    BATCH_EVENT_SOURCE,
    BATCH_JOB_QUEUE_BLOCKED,
    BATCH_JOB_STATE_CHANGE,
    ENV_INSTANCE_PROFILE_ARN,
    ENV_LAUNCH_TEMPLATE_NAME,
    ENV_MAX_VCPUS,
    ENV_RESOURCE_PREFIX,
    ENV_SECURITY_GROUPS,
    ENV_STATE_MACHINE_ARN,
    ENV_SUBNETS,
    ENV_TABLE,
    GSI1_NAME,
    GSI1_PK,
    GSI1_SK,
    GSI2_ATTRIBUTES,
    GSI2_LEGACY_NAME,
    GSI2_NAME,
    GSI2_PK,
    GSI2_SK,
    LAMBDAS,
    LAMBDAS_BY_KEY,
    METRICS_NAMESPACE,
    SERVICE_NAME,
    SWEEP_RATE_MINUTES,
    TABLE_PK,
    TABLE_SK,
    TTL_ATTRIBUTE,
)
from functions.shared.domain.fleet.userdata import BOOT_CHECK_BUDGET_SECONDS
from functions.shared.domain.fleet.userdata_risks import boot_time_risks, deadlock_risks
from functions.shared.domain.jobs.records import ActiveJob
from functions.shared.domain.jobs.views import ErrorBody
from stacks.api import ROUTES, edge_body_schema
from stacks.settings import LAUNCH_TEMPLATE_NAME
from stacks.workflow import asl_placeholders, definition_substitutions
from tests.infra.conftest import Synthesized

REPO = Path(__file__).resolve().parents[2]


def _only(resources: dict[str, dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    assert len(resources) == 1, f"expected exactly one, got {sorted(resources)}"
    return next(iter(resources.items()))


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _arn_of(logical_id: str) -> dict[str, Any]:
    return {"Fn::GetAtt": [logical_id, "Arn"]}


def _statements_with(statements: list[dict[str, Any]], action: str) -> list[dict[str, Any]]:
    return [s for s in statements if action in _as_list(s["Action"]) and s["Effect"] == "Allow"]


# --- storage -----------------------------------------------------------------------------------


def test_table_is_keyed_by_pk_and_sk_with_the_job_list_and_its_predecessor_index_projecting_everything(
    synthesized: Synthesized,
) -> None:
    # Given the synthesized stack, When its table is read
    _, table = _only(synthesized.of_type("AWS::DynamoDB::Table"))
    props = table["Properties"]
    # Then the single-table layout of constants.py is what the table declares
    assert props["KeySchema"] == [
        {"AttributeName": TABLE_PK, "KeyType": "HASH"},
        {"AttributeName": TABLE_SK, "KeyType": "RANGE"},
    ]
    types = {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]}
    assert types == {TABLE_PK: "S", TABLE_SK: "S", GSI1_PK: "S", GSI1_SK: "S", GSI2_PK: "S", GSI2_SK: "S"}
    indexes = {gsi["IndexName"]: gsi for gsi in props["GlobalSecondaryIndexes"]}
    assert set(indexes) == {GSI1_NAME, GSI2_NAME, GSI2_LEGACY_NAME}
    keys = {GSI1_NAME: (GSI1_PK, GSI1_SK), GSI2_NAME: (GSI2_PK, GSI2_SK), GSI2_LEGACY_NAME: (GSI2_PK, GSI2_SK)}
    for name, (pk, sk) in keys.items():
        assert indexes[name]["KeySchema"] == [
            {"AttributeName": pk, "KeyType": "HASH"},
            {"AttributeName": sk, "KeyType": "RANGE"},
        ]
    assert indexes[GSI1_NAME]["Projection"] == {"ProjectionType": "ALL"}
    # The predecessor of the sweep's index, unchanged: CloudFormation cannot change an index's projection
    assert indexes[GSI2_LEGACY_NAME]["Projection"] == {"ProjectionType": "ALL"}


def test_the_index_of_unfinished_jobs_projects_only_what_the_sweep_reads(synthesized: Synthesized) -> None:
    # Given the synthesized stack, When its table's index of unfinished jobs is read
    _, table = _only(synthesized.of_type("AWS::DynamoDB::Table"))
    (index,) = [gsi for gsi in table["Properties"]["GlobalSecondaryIndexes"] if gsi["IndexName"] == GSI2_NAME]
    # Then it projects the attributes the sweep reads (the job store writes them) and no others
    assert index["Projection"] == {"ProjectionType": "INCLUDE", "NonKeyAttributes": list(GSI2_ATTRIBUTES)}
    assert set(GSI2_ATTRIBUTES) <= set(ActiveJob.model_fields) | {"job_id"}


def test_table_is_on_demand_recoverable_encrypted_expiring_and_retained(synthesized: Synthesized) -> None:
    _, table = _only(synthesized.of_type("AWS::DynamoDB::Table"))
    props = table["Properties"]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert props["SSESpecification"]["SSEEnabled"] is True
    assert props["TimeToLiveSpecification"] == {"AttributeName": TTL_ATTRIBUTE, "Enabled": True}
    assert table["DeletionPolicy"] == "Retain"
    assert table["UpdateReplacePolicy"] == "Retain"


# --- lambdas -----------------------------------------------------------------------------------


def test_every_lambda_spec_becomes_a_traced_python_function_with_the_powertools_layer(
    synthesized: Synthesized,
) -> None:
    # Given every LambdaSpec, When its function is found by the handler path the spec names
    ids = synthesized.function_ids()
    assert set(ids) == set(LAMBDAS_BY_KEY), "a LambdaSpec has no function with its handler"
    for spec in LAMBDAS:
        props = synthesized.resources[ids[spec.key]]["Properties"]
        # Then it runs that handler as specified, traced by Lambda, with Powertools from its layer
        assert props["Handler"] == f"functions.{spec.key}.handler.handler" == spec.handler
        assert props["Runtime"] == "python3.11"
        assert props["Architectures"] == ["x86_64"]
        assert props["TracingConfig"] == {"Mode": "Active"}, spec.key
        [declared_layer] = props["Layers"]
        assert declared_layer["Ref"] in synthesized.template.to_json()["Parameters"], spec.key
        assert props["Timeout"] == spec.timeout_seconds
        assert props["MemorySize"] == spec.memory_mb
        assert "Ref" in props["LoggingConfig"]["LogGroup"], f"{spec.key} has no log group of its own"


def test_every_lambda_knows_its_table_and_powertools_identity(synthesized: Synthesized) -> None:
    table_id, _ = _only(synthesized.of_type("AWS::DynamoDB::Table"))
    for key, lid in synthesized.function_ids().items():
        env = synthesized.resources[lid]["Properties"]["Environment"]["Variables"]
        assert env[ENV_TABLE] == {"Ref": table_id}, key
        assert env["POWERTOOLS_SERVICE_NAME"] == SERVICE_NAME
        assert env["POWERTOOLS_METRICS_NAMESPACE"] == METRICS_NAMESPACE
        assert env["POWERTOOLS_LOG_LEVEL"] == "INFO"
        # No pydantic plugin scan of every installed distribution at each cold start.
        assert env["PYDANTIC_DISABLE_PLUGINS"] == "__all__", key


def test_lambdas_that_judge_availability_know_the_gpu_subnets(synthesized: Synthesized) -> None:
    ids = synthesized.function_ids()
    private_subnets = [
        {"Ref": lid}
        for lid, subnet in synthesized.of_type("AWS::EC2::Subnet").items()
        if subnet["Properties"]["MapPublicIpOnLaunch"] is False
    ]
    for key in ("api", "select_gpu", "ensure_queue"):
        subnets = synthesized.resources[ids[key]]["Properties"]["Environment"]["Variables"][ENV_SUBNETS]
        parts = [p for p in subnets["Fn::Join"][1] if p != ","]
        assert subnets["Fn::Join"][0] == ""
        assert sorted(map(json.dumps, parts)) == sorted(map(json.dumps, private_subnets)), key


def test_ensure_queue_gets_everything_a_gpu_compute_environment_needs(synthesized: Synthesized) -> None:
    env = synthesized.resources[synthesized.function_ids()["ensure_queue"]]["Properties"]["Environment"]["Variables"]
    sg_id = next(iter(synthesized.of_type("AWS::EC2::SecurityGroup")))
    profile_id = next(iter(synthesized.of_type("AWS::IAM::InstanceProfile")))
    assert env[ENV_SECURITY_GROUPS] == {"Fn::GetAtt": [sg_id, "GroupId"]}
    assert env[ENV_INSTANCE_PROFILE_ARN] == _arn_of(profile_id)
    assert env[ENV_LAUNCH_TEMPLATE_NAME] == LAUNCH_TEMPLATE_NAME
    assert int(env[ENV_MAX_VCPUS]) > 0
    assert env[ENV_RESOURCE_PREFIX] == SERVICE_NAME


def test_api_lambda_starts_executions_of_the_gpu_job_state_machine(synthesized: Synthesized) -> None:
    sm_id, _ = _only(synthesized.of_type("AWS::StepFunctions::StateMachine"))
    env = synthesized.resources[synthesized.function_ids()["api"]]["Properties"]["Environment"]["Variables"]
    assert env[ENV_STATE_MACHINE_ARN] == {"Ref": sm_id}
    statements = synthesized.function_statements("api")
    assert _statements_with(statements, "states:StartExecution")
    assert _statements_with(statements, "states:StopExecution")
    # POST /sweep starts the sweep in the sweep function, asynchronously, never in the request
    sweep_id = synthesized.function_ids()["health_sweep"]
    assert env["GPUPILOT_SWEEP_FUNCTION"] == {"Ref": sweep_id}
    [invoke] = _statements_with(statements, "lambda:InvokeFunction")
    assert invoke["Resource"] == _arn_of(sweep_id)


# --- iam ---------------------------------------------------------------------------------------


def test_no_lambda_is_granted_a_wildcard_action(synthesized: Synthesized) -> None:
    for key in synthesized.function_ids():
        for statement in synthesized.function_statements(key):
            wild = [a for a in _as_list(statement["Action"]) if "*" in a]
            assert not wild, f"{key} is granted {wild}"


def test_every_lambda_reads_and_writes_only_its_table_and_queries_only_it_and_the_indexes_it_reads(
    synthesized: Synthesized,
) -> None:
    table_id = next(iter(synthesized.of_type("AWS::DynamoDB::Table")))
    table = _arn_of(table_id)
    index = {name: {"Fn::Join": ["", [table, f"/index/{name}"]]} for name in (GSI1_NAME, GSI2_NAME, GSI2_LEGACY_NAME)}
    # The job list serves GET /jobs and GET /costs, and the sweep's look at a quarantined host's jobs; the index of
    # unfinished jobs (and its predecessor while it backfills) is scanned whole by the sweep, and by job_events to find
    # the attempts on an instance EC2 warns of.
    reads = {"api": [GSI1_NAME], "health_sweep": [GSI1_NAME]}
    scanners = []
    for key in synthesized.function_ids():
        for statement in synthesized.function_statements(key):
            actions = [a for a in _as_list(statement["Action"]) if a.startswith("dynamodb:")]
            if not actions:
                continue
            if actions == ["dynamodb:Query"]:
                wanted = [table, *(index[name] for name in reads.get(key, []))]
                resources = _as_list(statement["Resource"])
                assert sorted(map(json.dumps, resources)) == sorted(map(json.dumps, wanted)), key
            elif actions == ["dynamodb:Scan"]:
                # Only the sparse index of unfinished jobs is scanned, never the table
                assert sorted(map(json.dumps, statement["Resource"])) == sorted(
                    map(json.dumps, [index[GSI2_NAME], index[GSI2_LEGACY_NAME]])
                ), key
                scanners.append(key)
            else:
                assert statement["Resource"] == table, (key, actions)
            assert not {"dynamodb:BatchWriteItem", "dynamodb:DescribeTable"} & set(actions), key
    assert sorted(scanners) == ["health_sweep", "job_events"]


def test_only_the_api_reads_job_logs_and_only_gpu_pilot_s_streams_of_batch_s_log_group(
    synthesized: Synthesized,
) -> None:
    # Given every function's statements that grant logs:GetLogEvents
    readers = {
        key: statement["Resource"]
        for key in synthesized.function_ids()
        for statement in synthesized.function_statements(key)
        if "logs:GetLogEvents" in _as_list(statement["Action"])
    }
    # Then the api alone has it, on the streams under GPU Pilot's prefix in /aws/batch/job
    assert list(readers) == ["api"]
    rendered = json.dumps(readers["api"])
    assert ":log-group:/aws/batch/job:log-stream:gpupilot/*" in rendered


def _role_assumed_by(synthesized: Synthesized, service: str, description: str = "") -> str:
    return next(
        lid
        for lid, role in synthesized.of_type("AWS::IAM::Role").items()
        if role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": service}
        and description in role["Properties"].get("Description", "")
    )


def test_ensure_queue_may_pass_only_the_gpu_instance_role_and_submit_job_only_job_roles(
    synthesized: Synthesized,
) -> None:
    instance_role = _role_assumed_by(synthesized, "ec2.amazonaws.com")
    job_role = _role_assumed_by(synthesized, "ecs-tasks.amazonaws.com", "default role")
    execution_role = _role_assumed_by(synthesized, "ecs-tasks.amazonaws.com", "execution role")
    for key in synthesized.function_ids():
        passes = _statements_with(synthesized.function_statements(key), "iam:PassRole")
        if key == "ensure_queue":
            assert [s["Resource"] for s in passes] == [_arn_of(instance_role)]
        elif key == "submit_job":
            [statement] = passes
            resources = sorted(map(json.dumps, statement["Resource"]))
            roles = sorted(map(json.dumps, [_arn_of(job_role), _arn_of(execution_role)]))
            assert [r for r in resources if "Fn::GetAtt" in r] == roles
            [pattern] = [r for r in resources if "Fn::GetAtt" not in r]
            assert pattern.endswith(':role/gpupilot-job-*"]]}')
            # Scoped by the roles' ARNs alone: the roles pass through Batch, whatever service key it presents
            assert "Condition" not in statement
        else:
            assert not passes, f"{key} may pass roles"


def test_lambdas_that_resume_waits_can_answer_the_workflow_task_tokens_and_no_other_can(
    synthesized: Synthesized,
) -> None:
    # The waiter, the Batch event handler, the sweep (which replays missed events) and the diagnosis (a job
    # that started as its wait timed out) resume the workflow.
    responders = {"wait_for_job", "job_events", "health_sweep", "diagnose"}
    for key in synthesized.function_ids():
        statements = _statements_with(synthesized.function_statements(key), "states:SendTaskSuccess")
        if key not in responders:
            assert not statements, key
            continue
        # The Service Authorization Reference gives SendTaskSuccess no resource type: it can only be on "*"
        assert [s["Resource"] for s in statements] == ["*"], key


# --- workflow ----------------------------------------------------------------------------------


def test_state_machine_substitutes_every_asl_placeholder_with_a_lambda_arn(synthesized: Synthesized) -> None:
    # Given the ASL file and the synthesized state machine
    asl = (REPO / ASL_FILE).read_text(encoding="utf-8")
    _, machine = _only(synthesized.of_type("AWS::StepFunctions::StateMachine"))
    props = machine["Properties"]
    substitutions = props["DefinitionSubstitutions"]
    ids = synthesized.function_ids()
    # Then the definition is the ASL itself, and its placeholders are exactly the substitutions
    assert json.loads(props["DefinitionString"]) == json.loads(asl)
    assert set(re.findall(r"\$\{(\w+)\}", props["DefinitionString"])) == set(substitutions)
    expected = {spec.substitution: _arn_of(ids[spec.key]) for spec in LAMBDAS if spec.substitution}
    assert substitutions == expected | {"Partition": {"Ref": "AWS::Partition"}}


def test_state_machine_is_standard_logs_everything_and_is_traced(synthesized: Synthesized) -> None:
    _, machine = _only(synthesized.of_type("AWS::StepFunctions::StateMachine"))
    props = machine["Properties"]
    assert props["StateMachineType"] == "STANDARD"
    assert props["LoggingConfiguration"]["Level"] == "ALL"
    # A job's request (its environment values) stays out of CloudWatch Logs
    assert props["LoggingConfiguration"]["IncludeExecutionData"] is False
    assert props["TracingConfiguration"] == {"Enabled": True}


def test_state_machine_may_invoke_exactly_the_workflow_lambdas(synthesized: Synthesized) -> None:
    _, machine = _only(synthesized.of_type("AWS::StepFunctions::StateMachine"))
    role_id = machine["Properties"]["RoleArn"]["Fn::GetAtt"][0]
    invokes = _statements_with(synthesized.role_statements(role_id), "lambda:InvokeFunction")
    resources = [r for s in invokes for r in _as_list(s["Resource"])]
    ids = synthesized.function_ids()
    expected = [_arn_of(ids[spec.key]) for spec in LAMBDAS if spec.substitution]
    assert sorted(map(json.dumps, resources)) == sorted(map(json.dumps, expected))


def test_asl_and_lambda_specs_that_disagree_fail_synthesis_with_both_lists() -> None:
    # Given an ASL with a placeholder no LambdaSpec provides (and missing all the real ones)
    asl = '{"StartAt": "X", "States": {"X": {"Type": "Task", "Resource": "${NoSuchFunctionArn}", "End": true}}}'
    assert asl_placeholders(asl) == {"NoSuchFunctionArn"}
    # When substitutions are built, Then synthesis stops and names both sides of the mismatch
    with pytest.raises(ValueError, match=r"NoSuchFunctionArn.*SelectGpuTypeFunctionArn"):
        definition_substitutions(asl, {})


# --- batch fleet -------------------------------------------------------------------------------


def _user_data_text(value: Any) -> str:
    """The launch template's user data as the instance sees it."""
    assert isinstance(value, dict) and set(value) == {"Fn::Base64"}, value
    text = value["Fn::Base64"]
    assert isinstance(text, str), "user data must be a literal, not built from tokens"
    try:  # already encoded by someone else: decode once
        decoded = base64.b64decode(text, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return text
    return decoded if decoded.startswith("Content-Type:") else text


def test_launch_template_user_data_enables_gpus_without_setting_the_cluster_or_deadlocking(
    synthesized: Synthesized,
) -> None:
    # Given the GPU launch template, When its user data is decoded
    _, template = _only(synthesized.of_type("AWS::EC2::LaunchTemplate"))
    user_data = _user_data_text(template["Properties"]["LaunchTemplateData"]["UserData"])
    # Then it is MIME multipart (Batch merges it), turns GPU support on, leaves ECS_CLUSTER to Batch
    assert user_data.startswith("Content-Type: multipart/mixed; boundary=")
    assert "MIME-Version: 1.0" in user_data
    assert "ECS_ENABLE_GPU_SUPPORT=true" in user_data
    assert "ECS_CLUSTER" not in user_data
    # And it never starts ecs or docker synchronously (the cloud-init deadlock)
    assert deadlock_risks(user_data) == []


def test_launch_template_user_data_checks_every_gpu_at_boot_within_a_fixed_time(synthesized: Synthesized) -> None:
    # Given the GPU launch template's user data, as deployed
    _, template = _only(synthesized.of_type("AWS::EC2::LaunchTemplate"))
    user_data = _user_data_text(template["Properties"]["LaunchTemplateData"]["UserData"])
    # Then its boot check knows each GPU type's GPUs, says its verdict on the console, registers a failed host
    # without GPUs, and nothing in it can wait longer than its budget, whatever the driver does
    assert "gpupilot-boot-check" in user_data and "CONSOLE=/dev/console" in user_data
    arms = {t: arm.rsplit("=", 1)[1] for arm in re.findall(r"^  ([\w.|-]+\) expected=\d+) ;;$", user_data, re.M)
            for t in arm.split(")")[0].split("|")}  # fmt: skip
    assert (arms["g4dn.xlarge"], arms["g4dn.12xlarge"], arms["p5.48xlarge"]) == ("1", "4", "8")
    assert "echo 'ECS_ENABLE_GPU_SUPPORT=false' >> \"$ECS_CONFIG\"" in user_data
    worst, risks = boot_time_risks(user_data)
    assert risks == [] and 0 < worst <= BOOT_CHECK_BUDGET_SECONDS


def test_a_deployment_can_turn_the_boot_check_off() -> None:
    # Given the app's context with gpu_boot_check false
    from app import load_context
    from stacks.settings import DeploySettings

    settings = DeploySettings.from_context(load_context() | {"gpu_boot_check": False})
    # When its launch template's user data is rendered as the stack renders it / Then no check runs
    from functions.shared.adapters.ec2 import load_snapshot
    from functions.shared.domain.fleet.userdata import gpu_user_data

    assert settings.gpu_boot_check is False
    user_data = gpu_user_data({t: g.gpus for t, g in load_snapshot().items()}, boot_check=settings.gpu_boot_check)
    assert "gpupilot-boot-check" not in user_data and "ECS_ENABLE_GPU_SUPPORT=true" in user_data
    with pytest.raises(ValueError, match="gpu_boot_check"):
        DeploySettings.from_context(load_context() | {"gpu_boot_check": "no"})


def test_launch_template_requires_imdsv2_out_of_containers_reach_and_an_encrypted_root(
    synthesized: Synthesized,
) -> None:
    _, template = _only(synthesized.of_type("AWS::EC2::LaunchTemplate"))
    assert template["Properties"]["LaunchTemplateName"] == LAUNCH_TEMPLATE_NAME
    data = template["Properties"]["LaunchTemplateData"]
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    # One hop: the host reaches IMDS, a container behind the docker bridge does not (no instance role for jobs)
    assert data["MetadataOptions"]["HttpPutResponseHopLimit"] == 1
    [root] = data["BlockDeviceMappings"]
    assert root["DeviceName"] == "/dev/xvda"
    assert root["Ebs"] == {"DeleteOnTermination": True, "Encrypted": True, "VolumeSize": 100, "VolumeType": "gp3"}


def test_gpu_instances_get_the_ecs_and_ssm_policies_through_an_instance_profile(synthesized: Synthesized) -> None:
    _, profile = _only(synthesized.of_type("AWS::IAM::InstanceProfile"))
    [role_ref] = profile["Properties"]["Roles"]
    role = synthesized.resources[role_ref["Ref"]]
    policies = json.dumps(role["Properties"]["ManagedPolicyArns"])
    assert "service-role/AmazonEC2ContainerServiceforEC2Role" in policies
    assert "AmazonSSMManagedInstanceCore" in policies


def test_vpc_spans_the_context_zones_with_one_nat_and_flow_logs(synthesized: Synthesized) -> None:
    zones = {s["Properties"]["AvailabilityZone"] for s in synthesized.of_type("AWS::EC2::Subnet").values()}
    assert zones == set(synthesized.app.node.try_get_context("zones"))
    assert len(synthesized.of_type("AWS::EC2::NatGateway")) == 1
    _, flow_log = _only(synthesized.of_type("AWS::EC2::FlowLog"))
    assert flow_log["Properties"]["LogDestinationType"] == "cloud-watch-logs"
    assert flow_log["Properties"]["TrafficType"] == "ALL"


def test_gpu_security_group_accepts_no_inbound_traffic(synthesized: Synthesized) -> None:
    _, group = _only(synthesized.of_type("AWS::EC2::SecurityGroup"))
    assert not group["Properties"].get("SecurityGroupIngress")
    assert not synthesized.of_type("AWS::EC2::SecurityGroupIngress")


def test_no_batch_compute_environment_or_queue_is_declared(synthesized: Synthesized) -> None:
    # The ensure_queue Lambda pools them at run time; declaring any here would eat the 50-per-region quota.
    assert not synthesized.of_type("AWS::Batch::ComputeEnvironment")
    assert not synthesized.of_type("AWS::Batch::JobQueue")


# --- api ---------------------------------------------------------------------------------------


def test_every_api_method_requires_iam_authorization(synthesized: Synthesized) -> None:
    methods = {
        lid: m
        for lid, m in synthesized.of_type("AWS::ApiGateway::Method").items()
        if m["Properties"]["HttpMethod"] != "OPTIONS"
    }
    assert methods
    for lid, method in methods.items():
        assert method["Properties"]["AuthorizationType"] == "AWS_IAM", lid


def _resource_paths(synthesized: Synthesized) -> dict[str, str]:
    resources = synthesized.of_type("AWS::ApiGateway::Resource")

    def path(lid: str) -> str:
        props = resources[lid]["Properties"]
        parent = props["ParentId"]
        prefix = path(parent["Ref"]) if "Ref" in parent else ""
        return f"{prefix}/{props['PathPart']}"

    return {lid: path(lid) for lid in resources}


def test_every_documented_route_is_proxied_to_the_api_lambda(synthesized: Synthesized) -> None:
    # Given the resource tree of the REST API
    paths = _resource_paths(synthesized)
    api_arn = _arn_of(synthesized.function_ids()["api"])
    routes = {}
    for method in synthesized.of_type("AWS::ApiGateway::Method").values():
        props = method["Properties"]
        routes[(paths[props["ResourceId"]["Ref"]], props["HttpMethod"])] = props["Integration"]
    # Then the routes are exactly the documented ones, each a Lambda proxy to the api function
    assert set(routes) == {(r.path, r.method) for r in ROUTES}
    for route, integration in routes.items():
        assert integration["Type"] == "AWS_PROXY", route
        assert api_arn in integration["Uri"]["Fn::Join"][1], route


def test_every_body_is_checked_at_the_gateway_against_the_committed_openapi_model(synthesized: Synthesized) -> None:
    # Given the committed OpenAPI document, the one source of the request models
    openapi = json.loads((REPO / "docs" / "openapi.json").read_text())
    models = synthesized.of_type("AWS::ApiGateway::Model")
    validators = synthesized.of_type("AWS::ApiGateway::RequestValidator")
    paths = _resource_paths(synthesized)
    body_routes = {(r.path, r.method): r.body for r in ROUTES if r.body}
    assert body_routes
    for method in synthesized.of_type("AWS::ApiGateway::Method").values():
        props = method["Properties"]
        route = (paths[props["ResourceId"]["Ref"]], props["HttpMethod"])
        if route not in body_routes:
            assert "RequestModels" not in props, route
            continue
        # Then the body is validated at the gateway...
        validator = validators[props["RequestValidatorId"]["Ref"]]["Properties"]
        assert validator["ValidateRequestBody"] is True, route
        # ...against the model's fields as OpenAPI states them: required ones present, no others
        model = models[props["RequestModels"]["application/json"]["Ref"]]["Properties"]
        expected = edge_body_schema(openapi, body_routes[route].__name__)
        schema = dict(model["Schema"])
        assert schema.pop("$schema") == "http://json-schema.org/draft-04/schema#"
        assert schema == expected, route
        assert schema["additionalProperties"] is False
        assert set(schema["required"]) == REQUIRED_FIELDS[body_routes[route].__name__], route


# The fields each request body must have, as the API reference states them.
REQUIRED_FIELDS = {"JobRequest": {"name", "image", "command"}, "PurchaseRequest": {"offering_id", "max_upfront_usd"}}


# What API Gateway's validator and its other refusals may say: quotes (its validator quotes property names),
# a single quote, a backslash and line breaks (its signature errors spell out the canonical request).
HOSTILE_MESSAGE = "object has missing required properties ([\"image\"]) 'quoted' back\\slash\nline\r\ttab"
GATEWAY_VARIABLE = re.compile(r"\$(?:context|stageVariables|input|util|method)[A-Za-z0-9_.]*")


def render_gateway_response(template: str, response_type: str, message: str) -> str:
    """The body API Gateway makes from a gateway response template: it substitutes variables and runs no VTL
    (no #directives, no $util), and only $context.error.messageString arrives quoted and escaped as JSON."""
    assert "#set" not in template and "#if" not in template, "gateway response templates are not run by VTL"

    def value(found: re.Match[str]) -> str:
        name = found.group(0)
        assert name.startswith("$context."), f"{name}: unknown here, and gateway responses have no $util (no VTL)"
        if name == "$context.error.responseType":
            return response_type
        if name == "$context.error.messageString":
            return json.dumps(message)
        return message  # $context.error.message, $context.error.validationErrorString...: as they are

    return GATEWAY_VARIABLE.sub(value, template)


def test_the_gateway_answers_its_own_refusals_in_the_api_error_shape(synthesized: Synthesized) -> None:
    gateway_responses = synthesized.of_type("AWS::ApiGateway::GatewayResponse").values()
    responses = {r["Properties"]["ResponseType"]: r["Properties"] for r in gateway_responses}
    # Every refusal API Gateway makes itself (no signature, no route, a body the model refuses, throttling, its own
    # faults) is covered: DEFAULT_4XX and DEFAULT_5XX catch every type not set on its own.
    assert {"BAD_REQUEST_BODY", "DEFAULT_4XX", "DEFAULT_5XX"} <= set(responses)
    # A stage serves the gateway responses its deployment saw: the deployment is made after every one of them.
    _, deployment = _only(synthesized.of_type("AWS::ApiGateway::Deployment"))
    assert set(synthesized.of_type("AWS::ApiGateway::GatewayResponse")) <= set(deployment["DependsOn"])
    for kind, props in responses.items():
        assert props["ResponseParameters"]["gatewayresponse.header.Content-Type"] == "'application/json'", kind


@pytest.mark.parametrize("message", [HOSTILE_MESSAGE, "Missing Authentication Token"])
def test_every_gateway_response_is_json_in_the_error_shape_whatever_the_message(
    synthesized: Synthesized, message: str
) -> None:
    # Given every gateway response the stack declares, and a message with quotes, backslashes and line breaks
    responses = {
        r["Properties"]["ResponseType"]: r["Properties"]["ResponseTemplates"]
        for r in synthesized.of_type("AWS::ApiGateway::GatewayResponse").values()
    }
    assert responses
    for kind, templates in responses.items():
        response_type = "ACCESS_DENIED" if kind.startswith("DEFAULT_") else kind
        for content_type, template in templates.items():
            # When API Gateway fills it in
            body = render_gateway_response(template, response_type, message)
            # Then it is JSON in the API's error shape, naming the response type
            error = ErrorBody.model_validate(json.loads(body))
            assert (content_type, error.error) == ("application/json", response_type), kind
            assert error.message, kind
    refused_body = render_gateway_response(
        responses["BAD_REQUEST_BODY"]["application/json"], "BAD_REQUEST_BODY", message
    )
    assert ErrorBody.model_validate_json(refused_body).field == "body"


def test_the_rendering_of_gateway_responses_catches_an_unescaped_validator_message() -> None:
    # The check above would fail a template that puts the validator's words inside a JSON string as they are
    naive = '{"error": "$context.error.responseType", "message": "$context.error.validationErrorString"}'
    with pytest.raises(json.JSONDecodeError):
        json.loads(render_gateway_response(naive, "BAD_REQUEST_BODY", HOSTILE_MESSAGE))


def test_api_stage_logs_access_traces_and_throttles(synthesized: Synthesized) -> None:
    _, stage = _only(synthesized.of_type("AWS::ApiGateway::Stage"))
    props = stage["Properties"]
    assert props["TracingEnabled"] is True
    assert "DestinationArn" in props["AccessLogSetting"]
    [settings] = props["MethodSettings"]
    assert settings["LoggingLevel"] == "INFO"
    assert settings["MetricsEnabled"] is True
    assert settings["DataTraceEnabled"] is False
    assert settings["ThrottlingRateLimit"] > 0 and settings["ThrottlingBurstLimit"] > 0


def test_request_bodies_are_validated(synthesized: Synthesized) -> None:
    validator_id, validator = _only(synthesized.of_type("AWS::ApiGateway::RequestValidator"))
    assert validator["Properties"]["ValidateRequestBody"] is True
    for method in synthesized.of_type("AWS::ApiGateway::Method").values():
        props = method["Properties"]
        if props["HttpMethod"] == "POST" and "RequestModels" in props:
            assert props["RequestValidatorId"] == {"Ref": validator_id}


# --- events ------------------------------------------------------------------------------------


def _batch_rules(synthesized: Synthesized) -> list[dict[str, Any]]:
    """The rules of Batch events (the host agents' reports have their own: tests/infra/test_host_agent.py)."""
    return [
        r for r in synthesized.of_type("AWS::Events::Rule").values()
        if r["Properties"].get("EventPattern", {}).get("source") == [BATCH_EVENT_SOURCE]
    ]  # fmt: skip


def test_batch_job_events_reach_job_events_with_retries_and_a_secure_dead_letter_queue(
    synthesized: Synthesized,
) -> None:
    # Given the rule matching Batch's own events
    [rule] = _batch_rules(synthesized)
    pattern = rule["Properties"]["EventPattern"]
    assert pattern["source"] == [BATCH_EVENT_SOURCE]
    assert sorted(pattern["detail-type"]) == sorted([BATCH_JOB_STATE_CHANGE, BATCH_JOB_QUEUE_BLOCKED])
    # Then its only target is job_events, retried, with a dead-letter queue
    [target] = rule["Properties"]["Targets"]
    assert target["Arn"] == _arn_of(synthesized.function_ids()["job_events"])
    assert target["RetryPolicy"]["MaximumRetryAttempts"] > 0
    dlq_id = target["DeadLetterConfig"]["Arn"]["Fn::GetAtt"][0]
    queue = synthesized.resources[dlq_id]["Properties"]
    assert queue.get("SqsManagedSseEnabled") is True or "KmsMasterKeyId" in queue
    # And the queue refuses anything but TLS
    policies = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in synthesized.of_type("AWS::SQS::QueuePolicy").values()
        if {"Ref": dlq_id} in p["Properties"]["Queues"]
    ]
    assert any(
        s["Effect"] == "Deny" and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
        for statements in policies
        for s in statements
    )


def test_the_batch_event_rule_matches_only_gpu_pilot_s_queues_in_any_region_account_and_partition(
    synthesized: Synthesized,
) -> None:
    # Given the rule matching Batch's own events
    [rule] = _batch_rules(synthesized)
    pattern = rule["Properties"]["EventPattern"]
    # Then both event types are narrowed by the queue each carries in detail.jobQueue, to the queues named with
    # GPU Pilot's prefix, as one plain string (no token: the same pattern in any account, region, partition)
    assert pattern["detail"] == {"jobQueue": [{"wildcard": f"arn:*:batch:*:*:job-queue/{SERVICE_NAME}-*"}]}
    assert "Fn::" not in json.dumps(pattern)


def test_health_sweep_runs_every_five_minutes(synthesized: Synthesized) -> None:
    [rule] = [r for r in synthesized.of_type("AWS::Events::Rule").values() if "ScheduleExpression" in r["Properties"]]
    assert rule["Properties"]["ScheduleExpression"] == f"rate({SWEEP_RATE_MINUTES} minutes)" == "rate(5 minutes)"
    [target] = rule["Properties"]["Targets"]
    assert target["Arn"] == _arn_of(synthesized.function_ids()["health_sweep"])


# --- observability -----------------------------------------------------------------------------


def _alarm_topic(synthesized: Synthesized) -> str:
    topic_id, _ = _only(synthesized.of_type("AWS::SNS::Topic"))
    return topic_id


def test_every_alarm_notifies_the_alarm_topic(synthesized: Synthesized) -> None:
    topic = {"Ref": _alarm_topic(synthesized)}
    alarms = synthesized.of_type("AWS::CloudWatch::Alarm")
    assert alarms
    for lid, alarm in alarms.items():
        assert alarm["Properties"]["AlarmActions"] == [topic], lid


@pytest.mark.parametrize(
    ("metric", "statistic", "operator", "threshold"),
    [
        ("JobsFailed", "Sum", "GreaterThanThreshold", 0),
        ("StuckJobs", "Maximum", "GreaterThanOrEqualToThreshold", 1),
        ("InvalidComputeEnvironments", "Maximum", "GreaterThanOrEqualToThreshold", 1),
        ("UnregisteredInstances", "Maximum", "GreaterThanOrEqualToThreshold", 1),
        ("DisabledPools", "Maximum", "GreaterThanOrEqualToThreshold", 1),
        ("WasteUsd", "Sum", "GreaterThanOrEqualToThreshold", 1),
        ("QuarantinedHosts", "Sum", "GreaterThanOrEqualToThreshold", 1),
        ("UnhealthyPools", "Maximum", "GreaterThanOrEqualToThreshold", 1),
    ],
)
def test_custom_metric_alarms_watch_the_powertools_service_dimension(
    synthesized: Synthesized, metric: str, statistic: str, operator: str, threshold: int
) -> None:
    synthesized.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": METRICS_NAMESPACE,
            "MetricName": metric,
            "Dimensions": [{"Name": "service", "Value": SERVICE_NAME}],
            "Statistic": statistic,
            "Period": 300,
            "ComparisonOperator": operator,
            "Threshold": threshold,
            "AlarmActions": [{"Ref": _alarm_topic(synthesized)}],
        },
    )


def test_every_lambda_and_the_state_machine_have_a_failure_alarm(synthesized: Synthesized) -> None:
    alarms = synthesized.of_type("AWS::CloudWatch::Alarm").values()
    watched_functions = {
        json.dumps(d["Value"])
        for a in alarms
        if a["Properties"].get("MetricName") == "Errors"
        for d in a["Properties"]["Dimensions"]
        if d["Name"] == "FunctionName"
    }
    for key, lid in synthesized.function_ids().items():
        assert json.dumps({"Ref": lid}) in watched_functions, key
    sm_id, _ = _only(synthesized.of_type("AWS::StepFunctions::StateMachine"))
    synthesized.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/States",
            "MetricName": "ExecutionsFailed",
            "Dimensions": [{"Name": "StateMachineArn", "Value": {"Ref": sm_id}}],
        },
    )


def test_alarm_topic_is_kms_encrypted_and_refuses_plain_http(synthesized: Synthesized) -> None:
    topic_id, topic = _only(synthesized.of_type("AWS::SNS::Topic"))
    assert "Fn::GetAtt" in topic["Properties"]["KmsMasterKeyId"]
    synthesized.template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "Topics": [{"Ref": topic_id}],
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Effect": "Deny", "Condition": {"Bool": {"aws:SecureTransport": "false"}}})]
                )
            },
        },
    )


def test_dashboard_shows_cost_outcomes_fleet_health_and_executions(synthesized: Synthesized) -> None:
    _, dashboard = _only(synthesized.of_type("AWS::CloudWatch::Dashboard"))
    body = json.dumps(dashboard["Properties"]["DashboardBody"])
    for metric in ("JobCostUsd", "JobsSucceeded", "JobsFailed", "StuckJobs", "InvalidComputeEnvironments", "Fallbacks"):
        assert metric in body, metric
    assert "ExecutionsStarted" in body
    # Cost per day, jobs and waste together (one-day periods)
    assert "Cost per day (USD): jobs and waste" in body and '\\"period\\":86400' in body
    for metric in ("WasteUsd", "DisabledPools", "IdlePools", "GpuLessInstances", "DisconnectedAgents"):
        assert metric in body, metric
    for metric in ("QuarantinedHosts", "UnhealthyPools"):
        assert metric in body, metric


def test_the_sweep_may_drain_only_gpu_pilots_container_instances_and_read_only_its_pools_consoles(
    synthesized: Synthesized,
) -> None:
    statements = synthesized.function_statements("health_sweep")
    # Draining is authorized on the container instances of the clusters Batch makes for GPU Pilot's pools
    [drain] = _statements_with(statements, "ecs:UpdateContainerInstancesState")
    [resource] = _as_list(drain["Resource"])
    assert "container-instance/gpupilot*_Batch_*/*" in json.dumps(resource)
    # Console output, like termination, only of instances carrying the pool tag
    for key in ("health_sweep", "diagnose", "api"):
        [console] = _statements_with(synthesized.function_statements(key), "ec2:GetConsoleOutput")
        assert console["Condition"] == {"StringLike": {"ec2:ResourceTag/gpupilot:pool": "gpupilot-*"}}, key
        assert "instance/*" in json.dumps(console["Resource"])


def test_job_events_may_start_a_sweep_and_knows_the_sweep_function(synthesized: Synthesized) -> None:
    # A host that failed enough jobs gets a sweep at once: job_events invokes the sweep function, and only it
    sweep = {"Fn::GetAtt": [synthesized.function_ids()["health_sweep"], "Arn"]}
    [invoke] = _statements_with(synthesized.function_statements("job_events"), "lambda:InvokeFunction")
    assert _as_list(invoke["Resource"]) == [sweep]
    variables = synthesized.resources[synthesized.function_ids()["job_events"]]["Properties"]["Environment"]
    assert variables["Variables"]["GPUPILOT_SWEEP_FUNCTION"] == {"Ref": synthesized.function_ids()["health_sweep"]}


def test_stack_exports_the_api_url_state_machine_table_and_alarm_topic(synthesized: Synthesized) -> None:
    assert set(synthesized.outputs) == {
        "ApiUrl", "StateMachineArn", "TableName", "AlarmTopicArn", "JobRoleArn", "HostsBucket",
    }  # fmt: skip
