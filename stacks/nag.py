"""cdk-nag and checkov acknowledgements, each on the resource it concerns and each with its own reason."""

from __future__ import annotations

import json
from collections.abc import Iterable
from enum import Enum
from typing import Any

from aws_cdk import Acknowledgment, CfnResource, Stack, Validations
from constructs import IConstruct

from stacks.settings import API_THROTTLE_BURST, API_THROTTLE_RATE

# cdk-nag 3 reports through CDK's validation framework: an id qualified with the pack's namespace is
# matched by CDK against the report and recorded, with its reason, in the validation report.
NAG_NAMESPACE = "AwsSolutions"
SERVERLESS_NAMESPACE = "Serverless"


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge one cdk-nag finding (e.g. `AwsSolutions-L1`, `Serverless-LambdaDLQ`) on scope and its
    children; the pack's namespace is the rule's prefix."""
    if not reason.strip():
        raise ValueError(f"acknowledging {rule} on {scope.node.path} needs a reason")
    namespace = SERVERLESS_NAMESPACE if rule.startswith(f"{SERVERLESS_NAMESPACE}-") else NAG_NAMESPACE
    Validations.of(scope).acknowledge(Acknowledgment(id=f"{namespace}::{rule}", reason=reason))


def flatten_cfn_reference(node: Any) -> str:
    """A resolved CloudFormation value as cdk-nag names it in a finding (`<AWS::AccountId>`, `<Id.Arn>`)."""
    if isinstance(node, str):
        return node.replace("${", "<").replace("}", ">")
    if isinstance(node, dict) and "Fn::Join" in node:
        delimiter, items = node["Fn::Join"]
        return str(delimiter).join(flatten_cfn_reference(item) for item in items)
    if isinstance(node, dict) and "Fn::Sub" in node:
        return flatten_cfn_reference(node["Fn::Sub"])
    if isinstance(node, dict) and "Fn::GetAtt" in node:
        resource, attribute = node["Fn::GetAtt"]
        return f"<{flatten_cfn_reference(resource)}.{flatten_cfn_reference(attribute)}>"
    if isinstance(node, dict) and "Ref" in node:
        return f"<{flatten_cfn_reference(node['Ref'])}>"
    return json.dumps(node)


def wildcard_findings(scope: IConstruct, actions: Iterable[str], resources: Iterable[str]) -> list[str]:
    """The AwsSolutions-IAM5 finding ids cdk-nag raises for one policy statement of `scope`'s stack."""
    stack = Stack.of(scope)
    findings = [f"AwsSolutions-IAM5[Action::{action}]" for action in actions if "*" in action]
    flat = (flatten_cfn_reference(stack.resolve(resource)) for resource in resources)
    findings += [f"AwsSolutions-IAM5[Resource::{resource}]" for resource in flat if "*" in resource]
    return findings


class WildcardLedger:
    """Collects why each IAM5 finding of one role is needed, then acknowledges each finding once.

    A role can hit the same finding (e.g. `Resource::*`) for several reasons; acknowledging it twice
    would keep only the last reason, so the reasons are joined.
    """

    def __init__(self, scope: IConstruct) -> None:
        self._scope = scope
        self._reasons: dict[str, list[str]] = {}

    def add(self, actions: Iterable[str], resources: Iterable[str], reason: str) -> None:
        for finding in wildcard_findings(self._scope, actions, resources):
            reasons = self._reasons.setdefault(finding, [])
            if reason not in reasons:
                reasons.append(reason)

    def acknowledge_on(self, scope: IConstruct) -> None:
        for finding, reasons in self._reasons.items():
            acknowledge(scope, finding, " ".join(reasons))


# checkov, an independent IaC scanner run on the synthesized template (tests/infra/test_checkov.py), reads what
# it should skip on a resource from that resource's Metadata: {"checkov": {"skip": [{"id", "comment"}]}}.
CHECKOV_METADATA = "checkov"


class Kind(Enum):
    """What a resource is in this stack, which decides which checkov checks do not apply to it."""

    FUNCTION = "control-plane function"
    SYNCHRONOUS_FUNCTION = "synchronously invoked function"
    ASYNCHRONOUS_FUNCTION = "asynchronously invoked function"
    DEPLOYMENT_FUNCTION = "CDK's deploy-time custom resource function"
    LOG_GROUP = "log group"
    QUEUE = "failure or dead-letter queue"
    TABLE = "job table"
    API_STAGE = "API stage"
    HOSTS_BUCKET = "hosts bucket"
    AGENT_DEPLOYMENT_FUNCTION = "CDK's deploy-time function that publishes the host agent"


# Every checkov finding that does not apply here: resource kind -> check id -> why. A finding that applies is
# fixed in the stack instead; tests/infra/test_checkov.py fails on any other finding and on a reason no finding uses.
CHECKOV_ACKNOWLEDGMENTS: dict[Kind, dict[str, str]] = {
    Kind.FUNCTION: {
        # Ensure that AWS Lambda function is configured for function-level concurrent execution limit
        "CKV_AWS_115": (
            "Bounded upstream rather than by reserved concurrency: API Gateway's stage throttle "
            f"({API_THROTTLE_RATE} requests/s, burst {API_THROTTLE_BURST}) caps the api function and the workflows "
            "it starts, Batch's events and the 5-minute schedule cap the asynchronous ones. Lambda lets an account "
            "reserve only down to 100 unreserved executions, so reserving for every function would fail deployment "
            "in accounts still at a low concurrency quota and take capacity from the account's other functions."
        ),
        # Ensure that AWS Lambda function is configured inside a VPC
        "CKV_AWS_117": (
            "Nothing these functions reach is inside the VPC: they call AWS APIs only (DynamoDB, Batch, EC2, ECS, "
            "Step Functions, Service Quotas, Price List). In the VPC they would reach the same endpoints through the "
            "NAT gateway or paid interface endpoints, adding ENIs and a failure point; IAM, not the network, limits "
            "what they may do (stacks/permissions.py)."
        ),
        # Check encryption settings for Lambda environment variable
        "CKV_AWS_173": (
            "The environment holds resource names, ARNs, prefixes and tuning values only, never a secret (a job's "
            "secrets are ARNs that ECS resolves with the execution role). Lambda encrypts it at rest with its service "
            "key; a customer key would protect nothing secret and need kms:Decrypt on every function role."
        ),
    },
    Kind.SYNCHRONOUS_FUNCTION: {
        # Ensure that AWS Lambda function is configured for a Dead Letter Queue(DLQ)
        "CKV_AWS_116": (
            "Invoked synchronously only (API Gateway for the api, Step Functions' Task states for the workflow "
            "functions): the caller gets the error and retries or catches it (the GpuJob ASL's Retry and Catch, "
            "RecordFailure). Lambda sends only asynchronous invocations to a dead-letter queue, so one would stay "
            "empty."
        ),
    },
    Kind.ASYNCHRONOUS_FUNCTION: {
        "CKV_AWS_116": (
            "Its asynchronous invocations that still fail after Lambda's retries go to an on-failure destination, an "
            "encrypted SQS queue whose depth is alarmed (EventInvokeConfig). Lambda recommends destinations over "
            "dead-letter queues (they also carry the error); the check reads DeadLetterConfig only."
        ),
    },
    Kind.DEPLOYMENT_FUNCTION: {
        "CKV_AWS_115": (
            "CDK's provider that strips the VPC's default security group of its rules: CloudFormation invokes it once "
            "per create, update or delete of that resource, so its concurrency never exceeds one."
        ),
        "CKV_AWS_116": (
            "Runs during deployments only and answers CloudFormation itself: a failure fails the VPC's custom "
            "resource in the stack's events, where the operator deploying sees it; a dead-letter queue would hold "
            "nothing to act on."
        ),
        "CKV_AWS_117": (
            "Calls only the EC2 API (revoking the default security group's rules), during deployments: in the VPC it "
            "configures, the call would only take a detour through the NAT gateway."
        ),
    },
    Kind.LOG_GROUP: {
        # Ensure that CloudWatch Log Group is encrypted by KMS
        "CKV_AWS_158": (
            "CloudWatch Logs encrypts every log group at rest with its service keys. These groups hold the functions' "
            "structured logs (job environment values masked), Step Functions transitions without execution data, API "
            "access lines without bodies, and VPC flow records: no secret values. A customer key would have to trust "
            "the region's CloudWatch Logs principal for each group while protecting nothing more."
        ),
    },
    Kind.QUEUE: {
        # Ensure all data stored in the SQS queue is encrypted
        "CKV_AWS_27": (
            "Encrypted at rest with SQS-managed keys (SqsManagedSseEnabled, SSE-SQS) and refusing plain HTTP "
            "(enforce_ssl); the check recognises KMS (KmsMasterKeyId) only. Its messages are failed invocations: "
            "Batch job events, whose contents Batch itself shows to any principal allowed batch:DescribeJobs, and "
            "sweep triggers, which carry none; a customer key would not narrow who can read them."
        ),
    },
    Kind.TABLE: {
        # Ensure DynamoDB Tables are encrypted using a KMS Customer Managed CMK
        "CKV_AWS_119": (
            "Encrypted at rest with the AWS-managed KMS key (aws/dynamodb), with point-in-time recovery. What it holds "
            "is job records: a job's plain environment is also in its Batch job definition (readable with "
            "batch:DescribeJobDefinitions) and secrets are stored as ARNs only, so a customer key would add a key "
            "policy and kms grants on every function role without narrowing who can read the values."
        ),
    },
    Kind.HOSTS_BUCKET: {
        # Ensure the S3 bucket has access logging enabled
        "CKV_AWS_18": (
            "Only the instance role reads and writes this bucket, under agent/ and checkpoints/ (stacks/hosts.py); "
            "who did what is in CloudTrail's S3 data events where a deployment turns them on, and a second bucket "
            "for access logs would hold nothing a job's record does not."
        ),
        # Ensure the S3 bucket has versioning enabled
        "CKV_AWS_21": (
            "Nothing here is overwritten: the agent is published under its SHA-256 (a launch template pins that "
            "key) and each checkpoint under a new prefix that its manifest names; versions would only keep every "
            "expired checkpoint's bytes past its retention."
        ),
    },
    Kind.AGENT_DEPLOYMENT_FUNCTION: {
        # Check encryption settings for Lambda environment variable
        "CKV_AWS_173": (
            "CDK's aws-s3-deployment function: its environment names only the AWS CLI's location in its layer, no "
            "secret; Lambda encrypts environment variables at rest with its service key in every case."
        ),
    },
    Kind.API_STAGE: {
        # Ensure API Gateway caching is enabled
        "CKV_AWS_120": (
            "Every answer is a job's, a plan's or a sweep's current state, or a write, for a SigV4-signed caller: a "
            "cache would serve stale job status, and its key (path and query) does not include the caller. Caching is "
            "a latency feature, not a control, here."
        ),
    },
}


def acknowledge_checkov(scope: IConstruct, kind: Kind) -> None:
    """Skip, on the CloudFormation resource `scope` is (or wraps), the checkov checks that do not apply to its kind."""
    resource = scope if isinstance(scope, CfnResource) else scope.node.default_child
    if not isinstance(resource, CfnResource):
        raise TypeError(f"{scope.node.path} is not a CloudFormation resource: checkov skips go on one")
    reasons = CHECKOV_ACKNOWLEDGMENTS[kind]
    current = resource.get_metadata(CHECKOV_METADATA) or {}
    skips = [skip for skip in current.get("skip", []) if skip["id"] not in reasons]
    skips += [{"id": check, "comment": reason} for check, reason in reasons.items()]
    resource.add_metadata(CHECKOV_METADATA, {"skip": skips})
