"""The host agent's side of the stack: the hosts bucket (encrypted, private, checkpoints expiring), the agent published
in it under the digest the launch template pins, and the instance role's grants, which allow every call the agent
makes and nothing beside them."""

from __future__ import annotations

from typing import Any

import pytest

from gpupilot.localcloud.iam import Request, Statement, authorize, statements_of
from host_agent import package
from host_agent.aws import IAM_ACTIONS
from host_agent.checkpoints import MANIFEST
from host_agent.checkpoints import prefix as checkpoint_prefix
from host_agent.report import DETAIL_TYPE, NAMESPACE, SOURCE
from stacks.hosts import HOSTS_BUCKET_PREFIX
from stacks.settings import DEFAULT_CHECKPOINT_RETENTION_DAYS
from tests.infra.conftest import Synthesized

ACCOUNT, REGION = "123456789012", "us-east-1"
BUCKET = f"arn:aws:s3:::{HOSTS_BUCKET_PREFIX}-{ACCOUNT}-{REGION}"
OTHER_REGIONS_BUCKET = f"arn:aws:s3:::{HOSTS_BUCKET_PREFIX}-{ACCOUNT}-eu-west-1"
HOME_BUS = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/default"
JOB = "job-0123456789abcdef"


def resolve(node: Any) -> Any:
    """The template's values as a deployment in ACCOUNT and REGION would make them."""
    pseudo = {"AWS::AccountId": ACCOUNT, "AWS::Region": REGION, "AWS::Partition": "aws"}
    if isinstance(node, dict) and "Ref" in node and node["Ref"] in pseudo:
        return pseudo[node["Ref"]]
    if isinstance(node, dict) and "Fn::Join" in node:
        delimiter, items = node["Fn::Join"]
        return delimiter.join(str(resolve(item)) for item in items)
    if isinstance(node, list):
        return [resolve(item) for item in node]
    return node


def instance_role_statements(synthesized: Synthesized) -> list[Statement]:
    [role_id] = [lid for lid in synthesized.of_type("AWS::IAM::Role") if lid.startswith("BatchFleetInstanceRole")]
    return statements_of({"Statement": synthesized.role_statements(role_id)}, resolve)


# Every call the agent makes, as IAM authorizes it: the bootstrap's fetch, a restore (is there a manifest? read it and
# its files), an upload (files, then the manifest), a report, a minute of utilisation.
AGENT_CALLS = [
    Request("s3:GetObject", f"{BUCKET}/{package.object_key()}"),
    Request("s3:ListBucket", BUCKET, {"s3:prefix": checkpoint_prefix(JOB) + MANIFEST}),
    Request("s3:GetObject", f"{BUCKET}/{checkpoint_prefix(JOB)}{MANIFEST}"),
    Request("s3:GetObject", f"{BUCKET}/{checkpoint_prefix(JOB)}20270115T080000Z/model.pt"),
    Request("s3:PutObject", f"{BUCKET}/{checkpoint_prefix(JOB)}20270115T080000Z/model.pt"),
    Request("s3:PutObject", f"{BUCKET}/{checkpoint_prefix(JOB)}{MANIFEST}"),
    Request("events:PutEvents", HOME_BUS, {"events:source": SOURCE}),
    Request("cloudwatch:PutMetricData", "*", {"cloudwatch:namespace": NAMESPACE}),
]
# What the same role must not do: replace the agent hosts run, reach another bucket or another prefix, list the
# bucket, speak for another source or bus, write another namespace's metrics.
REFUSED_CALLS = [
    Request("s3:PutObject", f"{BUCKET}/{package.object_key()}"),
    Request("s3:GetObject", f"{OTHER_REGIONS_BUCKET}/{checkpoint_prefix(JOB)}{MANIFEST}"),
    Request("s3:GetObject", f"{BUCKET}/other/{MANIFEST}"),
    Request("s3:PutObject", f"arn:aws:s3:::someone-elses-bucket/{checkpoint_prefix(JOB)}{MANIFEST}"),
    Request("s3:ListBucket", BUCKET, {"s3:prefix": "agent/"}),
    Request("s3:DeleteObject", f"{BUCKET}/{checkpoint_prefix(JOB)}{MANIFEST}"),
    Request("events:PutEvents", HOME_BUS, {"events:source": "aws.batch"}),
    Request("events:PutEvents", f"arn:aws:events:us-west-2:{ACCOUNT}:event-bus/default", {"events:source": SOURCE}),
    Request("cloudwatch:PutMetricData", "*", {"cloudwatch:namespace": "AWS/EC2"}),
]


def test_every_action_the_agent_calls_is_among_the_calls_proven_here() -> None:
    # A new call in the agent's client must come with its grant and its proof here
    assert {call.action for call in AGENT_CALLS} == set(IAM_ACTIONS)


@pytest.mark.parametrize("call", AGENT_CALLS, ids=lambda call: f"{call.action} {call.resource.split(':::')[-1]}")
def test_the_instance_role_allows_each_call_the_host_agent_makes(synthesized: Synthesized, call: Request) -> None:
    assert authorize(instance_role_statements(synthesized), call) is None


@pytest.mark.parametrize("call", REFUSED_CALLS, ids=lambda call: f"{call.action} {call.resource.split(':::')[-1]}")
def test_the_instance_role_refuses_what_the_agent_does_not_need(synthesized: Synthesized, call: Request) -> None:
    assert authorize(instance_role_statements(synthesized), call) is not None


def test_the_hosts_bucket_is_encrypted_private_tls_only_and_expires_checkpoints(synthesized: Synthesized) -> None:
    [(bucket_id, bucket)] = synthesized.of_type("AWS::S3::Bucket").items()
    properties = bucket["Properties"]
    assert resolve(properties["BucketName"]) == BUCKET.removeprefix("arn:aws:s3:::")
    [encryption] = properties["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    assert properties["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True, "BlockPublicPolicy": True, "IgnorePublicAcls": True, "RestrictPublicBuckets": True,
    }  # fmt: skip
    [rule] = properties["LifecycleConfiguration"]["Rules"]
    assert rule["Status"] == "Enabled" and rule["Prefix"] == checkpoint_prefix("").rstrip("/") + "/"
    assert rule["ExpirationInDays"] == DEFAULT_CHECKPOINT_RETENTION_DAYS
    [policy] = synthesized.of_type("AWS::S3::BucketPolicy").values()
    [deny] = policy["Properties"]["PolicyDocument"]["Statement"]
    assert deny["Effect"] == "Deny" and deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert bucket["DeletionPolicy"] == "Retain", bucket_id


def test_the_agent_the_launch_template_pins_is_the_one_published_in_the_hosts_bucket(synthesized: Synthesized) -> None:
    # Given the launch template's user data and the deployment that copies the agent into the bucket
    [template] = synthesized.of_type("AWS::EC2::LaunchTemplate").values()
    user_data = template["Properties"]["LaunchTemplateData"]["UserData"]["Fn::Base64"]
    [bucket_id] = synthesized.of_type("AWS::S3::Bucket")
    [deployment] = synthesized.of_type("Custom::CDKBucketDeployment").values()
    # Then the user data fetches this agent's digest from the hosts bucket of the home region
    assert f"bootstrap.py {HOSTS_BUCKET_PREFIX} {REGION} {package.digest()} /opt/gpupilot/agent.pyz" in user_data
    # And the deployment writes into that bucket, keeping the agents older pools still pin
    assert deployment["Properties"]["DestinationBucketName"] == {"Ref": bucket_id}
    assert deployment["Properties"].get("Prune") is False


def test_the_agents_reports_reach_job_events_with_retries_and_the_events_dead_letter_queue(
    synthesized: Synthesized,
) -> None:
    [rule] = [
        r for r in synthesized.of_type("AWS::Events::Rule").values()
        if r["Properties"].get("EventPattern", {}).get("source") == [SOURCE]
    ]  # fmt: skip
    assert rule["Properties"]["EventPattern"]["detail-type"] == [DETAIL_TYPE]
    [target] = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [synthesized.function_ids()["job_events"], "Arn"]}
    assert target["RetryPolicy"]["MaximumRetryAttempts"] == 8 and "DeadLetterConfig" in target


def test_ec2_s_spot_signals_reach_job_events_with_retries_and_the_events_dead_letter_queue(
    synthesized: Synthesized,
) -> None:
    # Given the home stack's rules
    [rule] = [
        r for r in synthesized.of_type("AWS::Events::Rule").values()
        if r["Properties"].get("EventPattern", {}).get("source") == ["aws.ec2"]
    ]  # fmt: skip
    # Then one matches EC2's interruption warning and rebalance recommendation (every spot instance's: the events
    # carry no tags), and hands them to job_events, retried, with a dead-letter queue
    assert rule["Properties"]["EventPattern"] == {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Spot Instance Interruption Warning", "EC2 Instance Rebalance Recommendation"],
    }
    [target] = rule["Properties"]["Targets"]
    job_events = synthesized.function_ids()["job_events"]
    assert target["Arn"] == {"Fn::GetAtt": [job_events, "Arn"]}
    assert target["RetryPolicy"]["MaximumRetryAttempts"] == 8 and "DeadLetterConfig" in target
    # And EventBridge may invoke job_events for that rule only
    rule_id = next(k for k, v in synthesized.of_type("AWS::Events::Rule").items() if v is rule)
    [permission] = [
        p["Properties"] for p in synthesized.of_type("AWS::Lambda::Permission").values()
        if p["Properties"].get("SourceArn") == {"Fn::GetAtt": [rule_id, "Arn"]}
    ]  # fmt: skip
    assert permission["Action"] == "lambda:InvokeFunction" and permission["Principal"] == "events.amazonaws.com"
    assert permission["FunctionName"] == {"Fn::GetAtt": [job_events, "Arn"]}
