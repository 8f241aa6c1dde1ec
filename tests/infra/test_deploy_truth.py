"""What a real deployment needs that the local cloud would not notice: the template's account and region,
the layer it runs, what it keeps when deleted, where failures go, and what it logs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from app import build_app, load_context
from functions.shared.constants import STACK_NAME
from functions.shared.domain.core.vocabulary import MetricName
from stacks.observability import CUSTOM_ALARMS
from stacks.settings import POWERTOOLS_VERSION
from tests.infra.conftest import Synthesized

REPO = Path(__file__).resolve().parents[2]
FOREIGN_ACCOUNT = "210987654321"


def synth(tmp_path: Path, context: dict[str, Any], environ: dict[str, str]) -> str:
    app, _ = build_app(context, outdir=tmp_path / "cdk.out", lambda_build_dir=tmp_path / "lambda", environ=environ)
    app.synth()
    return (tmp_path / "cdk.out" / f"{STACK_NAME}.template.json").read_text()


def test_a_template_for_another_account_and_region_names_no_other(tmp_path: Path) -> None:
    # Given the caller's credentials in another account, and a context for another region
    context = load_context() | {"region": "eu-west-1", "zones": ["eu-west-1a", "eu-west-1b"]}

    # When synthesizing
    text = synth(tmp_path, context, {"CDK_DEFAULT_ACCOUNT": FOREIGN_ACCOUNT, "CDK_DEFAULT_REGION": "eu-west-1"})

    # Then no ARN names the offline placeholder account or the default region
    assert "123456789012" not in text
    assert "us-east-1" not in text
    assert re.search(r"arn:aws:[a-z-]+:eu-west-1:", text)


def test_an_offline_template_names_no_account_at_all(synthesized: Synthesized) -> None:
    # Given the template synthesized without credentials / Then ARNs use the AWS::AccountId pseudo parameter
    text = json.dumps(synthesized.template.to_json())
    assert not re.search(r"\b\d{12}\b", text)
    assert '{"Ref": "AWS::AccountId"}' in text


def test_the_powertools_layer_is_the_release_the_tests_run(synthesized: Synthesized) -> None:
    # Given requirements.txt's pin (what every test runs)
    pinned = re.search(r"^aws-lambda-powertools==(\S+)$", (REPO / "requirements.txt").read_text(), re.M)
    assert pinned is not None and pinned.group(1) == POWERTOOLS_VERSION
    # Then every function's layer is the one Powertools publishes for exactly that release (resolved at deploy)
    parameters = synthesized.template.to_json()["Parameters"]
    for key, function_id in synthesized.function_ids().items():
        [layer] = synthesized.resources[function_id]["Properties"]["Layers"]
        parameter = parameters[layer["Ref"]]
        assert parameter["Type"] == "AWS::SSM::Parameter::Value<String>", key
        assert parameter["Default"] == f"/aws/service/powertools/python/x86_64/python3.11/{pinned.group(1)}", key


def test_api_gateways_account_logging_role_outlives_the_stack(synthesized: Synthesized) -> None:
    # Given the account-level CloudWatch role API Gateway logs with
    accounts = synthesized.of_type("AWS::ApiGateway::Account")
    [(account_id, account)] = accounts.items()
    role_id = account["Properties"]["CloudWatchRoleArn"]["Fn::GetAtt"][0]
    # Then deleting GPU Pilot leaves both (other APIs of the account log through them)
    assert synthesized.resources[role_id]["DeletionPolicy"] == "Retain"
    assert synthesized.resources[account_id]["DeletionPolicy"] == "Retain"


def test_a_deployment_may_leave_the_account_logging_role_alone(tmp_path: Path) -> None:
    # Given a context that says the account's API Gateway role is someone else's
    text = synth(tmp_path, load_context() | {"api_gateway_cloudwatch_role": False}, {})
    # Then the stack declares none
    assert "AWS::ApiGateway::Account" not in text


@pytest.mark.parametrize("key", ["job_events", "health_sweep"])
def test_asynchronously_invoked_functions_send_failures_to_an_alarmed_queue(synthesized: Synthesized, key: str) -> None:
    # Given a function EventBridge (or POST /sweep) invokes asynchronously
    function_id = synthesized.function_ids()[key]
    [config] = [
        c["Properties"]
        for c in synthesized.of_type("AWS::Lambda::EventInvokeConfig").values()
        if c["Properties"]["FunctionName"] == {"Ref": function_id}
    ]
    # Then an error after Lambda's retries lands in an encrypted queue, the role may send to it, an alarm watches it
    queue_id = config["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0]
    assert synthesized.resources[queue_id]["Properties"]["SqsManagedSseEnabled"] is True
    sends = [s for s in synthesized.function_statements(key) if "sqs:SendMessage" in json.dumps(s["Action"])]
    assert any(s["Resource"] == {"Fn::GetAtt": [queue_id, "Arn"]} for s in sends)
    synthesized.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/SQS",
            "MetricName": "ApproximateNumberOfMessagesVisible",
            "Dimensions": [{"Name": "QueueName", "Value": {"Fn::GetAtt": [queue_id, "QueueName"]}}],
            "Threshold": 1,
        },
    )


def test_the_execution_role_reads_only_secrets_under_the_deployments_prefix(synthesized: Synthesized) -> None:
    # Given the role ECS reads jobs' secrets with
    [(role_id, _)] = [
        (lid, r)
        for lid, r in synthesized.of_type("AWS::IAM::Role").items()
        if "execution role" in r["Properties"].get("Description", "")
    ]
    statements = synthesized.role_statements(role_id)
    # Then it may read secrets and parameters under gpupilot/ only, and nothing else
    [statement] = statements
    assert sorted(statement["Action"]) == ["secretsmanager:GetSecretValue", "ssm:GetParameters"]
    resources = json.dumps(statement["Resource"])
    assert ':secret:gpupilot/*"' in resources and ':parameter/gpupilot/*"' in resources


def test_the_default_job_role_grants_nothing(synthesized: Synthesized) -> None:
    [(role_id, role)] = [
        (lid, r)
        for lid, r in synthesized.of_type("AWS::IAM::Role").items()
        if "default role" in r["Properties"].get("Description", "")
    ]
    assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "ecs-tasks.amazonaws.com"
    }
    assert synthesized.role_statements(role_id) == []
    assert "ManagedPolicyArns" not in role["Properties"]


def test_every_metric_an_alarm_or_the_dashboard_watches_has_an_emitter(synthesized: Synthesized) -> None:
    # Given the use cases' source / When looking for each watched metric's emitter
    sources = "\n".join(p.read_text() for p in (REPO / "functions" / "shared" / "usecases").rglob("*.py"))
    emitted = {name for name in MetricName if re.search(rf"MetricName\.{name.name}\b", sources)}
    dashboard = json.dumps(synthesized.of_type("AWS::CloudWatch::Dashboard"))
    watched = {spec.metric for spec in CUSTOM_ALARMS} | {m for m in MetricName if f'"{m.value}"' in dashboard}
    # Then each is emitted somewhere
    assert watched - emitted == set()


def test_a_made_up_region_fails_synth_naming_the_key_and_the_valid_ones() -> None:
    import pytest

    from stacks.settings import DeploySettings

    with pytest.raises(ValueError, match=r"context 'region' .* got 'mars-north-1'; valid: .*us-east-1"):
        DeploySettings.from_context(
            load_context() | {"region": "mars-north-1", "zones": ["mars-north-1a", "mars-north-1b"]}
        )


# --- IAM as the Service Authorization Reference has it ------------------------------------------------
def test_no_function_is_granted_on_everything_an_action_that_supports_resource_level_permissions(
    synthesized: Synthesized,
) -> None:
    # Given every function's statements on Resource "*" / Then each action on it has no resource types in the
    # Service Authorization Reference (stacks/iam_reference.py), or a reason that names it and says why
    from tests.iam_drift import wildcard_grants

    assert wildcard_grants(synthesized.template.to_json()) == []


def test_a_describe_grant_refuses_an_action_that_has_resource_types() -> None:
    # Given the grant of read-only calls on "*", whose reason claims they have no resource types
    from stacks.permissions import describe

    # Then it cannot be given an action the Service Authorization Reference scopes (the claim would be false)
    with pytest.raises(ValueError, match="batch:TerminateJob"):
        describe("AWS Batch", "batch:DescribeJobs", "batch:TerminateJob")


def test_quota_reads_are_granted_on_everything_because_get_service_quota_has_no_resource_types(
    synthesized: Synthesized,
) -> None:
    # A grant on the quotas' ARNs would never match: AWS authorizes GetServiceQuota on "*" only
    for key in synthesized.function_ids():
        for statement in synthesized.function_statements(key):
            if "servicequotas:GetServiceQuota" in json.dumps(statement["Action"]):
                assert statement["Resource"] == "*", key


def test_ecs_fleet_grants_reach_only_the_clusters_batch_creates_for_gpu_pilots_compute_environments(
    synthesized: Synthesized,
) -> None:
    # Given every function's ECS statements (fleet reads, the sweep's deregistration)
    ecs = [
        (key, statement)
        for key in synthesized.function_ids()
        for statement in synthesized.function_statements(key)
        if "ecs:" in json.dumps(statement["Action"])
    ]
    assert {key for key, _ in ecs} >= {"api", "diagnose", "health_sweep", "job_events", "record_cost"}
    # Then each names the clusters AWS Batch names <compute environment>_Batch_<uuid>, for gpupilot* ones only
    for key, statement in ecs:
        resources = json.dumps(statement["Resource"])
        assert re.search(r':(cluster/gpupilot\*_Batch_\*|container-instance/gpupilot\*_Batch_\*/\*)"', resources), (
            key,
            resources,
        )
        assert ":cluster/*" not in resources and ":container-instance/*" not in resources, key
