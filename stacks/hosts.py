"""The hosts bucket: the host agent GPU Pilot's hosts fetch (`agent/<sha256>.pyz`, published here at deploy time) and
the checkpoint directories of jobs that ask for them (`checkpoints/<job_id>/`, expiring after the deployment's
`checkpoint_retention_days`), and what the instance role may do with it and with the agent's reports.

The bucket is named `<HOSTS_BUCKET_PREFIX>-<account>-<home region>` so that a host in any capacity region finds it
from what it reads of itself (its account, from the instance metadata) and what its user data says (the prefix and the
home region); the agent names the account as the bucket's expected owner on every request, so a bucket of that name in
another account is refused by S3.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from constructs import Construct

from host_agent import package
from host_agent.checkpoints import prefix as checkpoint_prefix
from host_agent.report import NAMESPACE, SOURCE
from stacks.nag import Kind, WildcardLedger, acknowledge, acknowledge_checkov

HOSTS_BUCKET_PREFIX = "gpupilot-hosts"
CHECKPOINTS = checkpoint_prefix("").rstrip("/") + "/"  # "checkpoints/"


def hosts_bucket_name(account: str, home_region: str) -> str:
    return f"{HOSTS_BUCKET_PREFIX}-{account}-{home_region}"


def agent_statements(partition: str, account: str, home_region: str) -> list[iam.PolicyStatement]:
    """What the host agent does with the instance role, and nothing more: read the agent and checkpoints, write
    checkpoints, list only under checkpoints/ (a restore asks whether a manifest exists), send its reports to the home
    region's default bus as `gpupilot.agent`, and put metrics in GPU Pilot's namespace.

    IAM references (Service Authorization Reference): Amazon S3 (GetObject and PutObject on `object`, ListBucket on
    `bucket` with `s3:prefix`); Amazon EventBridge (PutEvents on `event-bus`, condition key `events:source`); Amazon
    CloudWatch (PutMetricData has no resource type, condition key `cloudwatch:namespace`)."""
    bucket = f"arn:{partition}:s3:::{hosts_bucket_name(account, home_region)}"
    return [
        iam.PolicyStatement(
            actions=["s3:GetObject"], resources=[f"{bucket}/{package.AGENT_PREFIX}*", f"{bucket}/{CHECKPOINTS}*"]
        ),
        iam.PolicyStatement(actions=["s3:PutObject"], resources=[f"{bucket}/{CHECKPOINTS}*"]),
        iam.PolicyStatement(
            actions=["s3:ListBucket"],
            resources=[bucket],
            conditions={"StringLike": {"s3:prefix": [f"{CHECKPOINTS}*"]}},
        ),
        iam.PolicyStatement(
            actions=["events:PutEvents"],
            resources=[f"arn:{partition}:events:{home_region}:{account}:event-bus/default"],
            conditions={"StringEquals": {"events:source": [SOURCE]}},
        ),
        iam.PolicyStatement(
            actions=["cloudwatch:PutMetricData"],
            resources=["*"],
            conditions={"StringEquals": {"cloudwatch:namespace": NAMESPACE}},
        ),
    ]


def agent_asset_directory() -> str:
    """A directory holding the agent as the bucket keeps it (`agent/<sha256>.pyz`), for the deployment to copy."""
    root = Path(tempfile.mkdtemp(prefix="gpupilot-agent-"))
    target = root / package.object_key()
    target.parent.mkdir(parents=True)
    target.write_bytes(package.zipapp())
    return str(root)


class HostsBucket(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, checkpoint_retention_days: int) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            bucket_name=hosts_bucket_name(stack.account, stack.region),
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=False,  # a checkpoint is written under a new prefix each time; its manifest names the latest
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="checkpoints-expire",
                    prefix=CHECKPOINTS,
                    expiration=Duration.days(checkpoint_retention_days),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                )
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )
        self.deployment = s3deploy.BucketDeployment(
            self,
            "Agent",
            sources=[s3deploy.Source.asset(agent_asset_directory())],
            destination_bucket=self.bucket,
            destination_key_prefix="",
            # Older agents stay: a pool's launch template pins the one it was made with until it is retired.
            prune=False,
            retain_on_delete=True,
        )
        acknowledge(
            self.bucket,
            "AwsSolutions-S1",
            "Only the instance role reads and writes this bucket, under agent/ and checkpoints/ (stacks/hosts.py); "
            "who did what is in CloudTrail's S3 data events where a deployment turns them on, and a second bucket "
            "for access logs would hold nothing a job's record does not.",
        )
        acknowledge_checkov(self.bucket, Kind.HOSTS_BUCKET)
        _acknowledge_deployment_function(stack)


WHY_DEPLOYMENT_FUNCTION = (
    "CDK's own deploy-time function that copies the host agent into the hosts bucket (aws-s3-deployment): it runs "
    "once per deployment from CloudFormation, which waits for it; CDK picks its runtime, its managed logging policy "
    "and its S3 actions (read the asset bucket's objects, write the hosts bucket's); nothing invokes it at run time."
)


def _acknowledge_deployment_function(stack: Stack) -> None:
    for child in stack.node.children:
        if not child.node.id.startswith("Custom::CDKBucketDeployment"):
            continue
        ledger = WildcardLedger(child)
        policy = child.node.find_child("ServiceRole").node.find_child("DefaultPolicy")
        assert isinstance(policy, iam.Policy)
        for statement in stack.resolve(policy.document.to_json())["Statement"]:
            ledger.add(_listed(statement["Action"]), _listed(statement["Resource"]), WHY_DEPLOYMENT_FUNCTION)
        ledger.acknowledge_on(child)
        logging_policy = "arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
        for rule in (f"AwsSolutions-IAM4[Policy::{logging_policy}]", "AwsSolutions-L1", "Serverless-LambdaDLQ",
                     "Serverless-LambdaLatestVersion", "Serverless-LambdaTracing"):  # fmt: skip
            acknowledge(child, rule, WHY_DEPLOYMENT_FUNCTION)
        acknowledge_checkov(child, Kind.DEPLOYMENT_FUNCTION)
        acknowledge_checkov(child, Kind.AGENT_DEPLOYMENT_FUNCTION)
        log_group = child.node.try_find_child("LogGroup")
        if log_group is not None:
            acknowledge_checkov(log_group, Kind.LOG_GROUP)


def _listed(value: Any) -> list[Any]:
    """A policy's Action or Resource as a list (its resources may be resolved references, not strings)."""
    return value if isinstance(value, list) else [value]
