"""What each Lambda may do in AWS, as data: one table, reviewed in one place.

Mutating Batch calls are scoped to this account, region and the control plane's name prefix. The
read-only Describe/List calls of Batch, EC2, ECS, Auto Scaling and the Price List API have no resource
types in IAM, so they need `*`; each such grant says so, and that reason becomes its cdk-nag
acknowledgement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

WHY_DESCRIBE = (
    "Read-only Describe/List/Get calls of {service} have no resource types in IAM (Service "
    "Authorization Reference), so they can only be granted on Resource '*'."
)
WHY_JOB_IDS = (
    "Batch assigns job ids at submit time, so job actions are scoped to this account and region's "
    "jobs (job/*) rather than to names known at deploy time."
)
WHY_PREFIX = (
    "Compute environments, job queues and job definitions are created at run time by the control "
    "plane, always named with the '{prefix}' prefix; the grant is scoped to that prefix."
)
WHY_ECS_CLUSTER = (
    "The ECS cluster behind a compute environment is named by AWS Batch (<environment>_Batch_<uuid>) "
    "when the environment is created, so no name is known at deploy time to scope ecs:CreateCluster to."
)
WHY_QUOTAS = "Only EC2 quotas are read (GPU instance families); quota codes vary by family and capacity."


@dataclass(frozen=True)
class Grant:
    """One IAM statement; `reason` says why a wildcard in it is unavoidable."""

    actions: tuple[str, ...]
    resources: tuple[str, ...]
    reason: str = ""
    conditions: Mapping[str, Any] | None = field(default=None)

    def has_wildcard(self) -> bool:
        return any("*" in item for item in (*self.actions, *self.resources))


@dataclass(frozen=True)
class Arns:
    """ARN patterns of what the control plane creates; literal strings so cdk-nag findings are exact."""

    partition: str
    region: str
    account: str
    prefix: str

    def _batch(self, resource: str) -> str:
        return f"arn:{self.partition}:batch:{self.region}:{self.account}:{resource}"

    @property
    def jobs(self) -> str:
        return self._batch("job/*")

    @property
    def compute_environments(self) -> str:
        return self._batch(f"compute-environment/{self.prefix}*")

    @property
    def job_queues(self) -> str:
        return self._batch(f"job-queue/{self.prefix}*")

    @property
    def job_definitions(self) -> str:
        return self._batch(f"job-definition/{self.prefix}*")

    @property
    def batch_service_linked_role(self) -> str:
        return (
            f"arn:{self.partition}:iam::{self.account}:role/aws-service-role/batch.amazonaws.com/AWSServiceRoleForBatch"
        )

    def state_machine(self, name: str) -> str:
        return f"arn:{self.partition}:states:{self.region}:{self.account}:stateMachine:{name}"

    def executions(self, state_machine_name: str) -> str:
        return f"arn:{self.partition}:states:{self.region}:{self.account}:execution:{state_machine_name}:*"

    @property
    def ec2_quotas(self) -> str:
        return f"arn:{self.partition}:servicequotas:{self.region}:{self.account}:ec2/*"


def _describe(service: str, *actions: str) -> Grant:
    return Grant(actions=actions, resources=("*",), reason=WHY_DESCRIBE.format(service=service))


def _cancel_jobs(arns: Arns, *actions: str) -> Grant:
    return Grant(actions=actions, resources=(arns.jobs,), reason=WHY_JOB_IDS)


def _sweep_grants(arns: Arns) -> list[Grant]:
    """Read Batch, ECS, EC2 and Auto Scaling state; cancel stuck jobs; disable broken pools."""
    return [
        _describe(
            "AWS Batch",
            "batch:DescribeJobs",
            "batch:DescribeJobQueues",
            "batch:DescribeComputeEnvironments",
            "batch:DescribeJobDefinitions",
            "batch:ListJobs",
        ),
        _cancel_jobs(arns, "batch:TerminateJob", "batch:CancelJob"),
        Grant(
            actions=("batch:UpdateComputeEnvironment",),
            resources=(arns.compute_environments,),
            reason=WHY_PREFIX.format(prefix=arns.prefix),
        ),
        _describe(
            "Amazon ECS",
            "ecs:ListContainerInstances",
            "ecs:DescribeContainerInstances",
            "ecs:ListClusters",
            "ecs:DescribeClusters",
        ),
        _describe("Amazon EC2", "ec2:DescribeInstances", "ec2:DescribeInstanceStatus"),
        _describe("EC2 Auto Scaling", "autoscaling:DescribeAutoScalingGroups"),
    ]


def function_grants(arns: Arns, *, instance_role_arn: str) -> dict[str, list[Grant]]:
    """Every Lambda's AWS permissions beyond its table, logs and X-Ray, keyed like constants.LAMBDAS."""
    prefix_reason = WHY_PREFIX.format(prefix=arns.prefix)
    pricing = _describe("the AWS Price List API", "pricing:GetProducts")
    return {
        "api": [
            _cancel_jobs(arns, "batch:TerminateJob", "batch:CancelJob"),
            _describe("AWS Batch", "batch:DescribeJobs"),
            _describe(
                "Amazon EC2",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeInstanceTypeOfferings",
                "ec2:DescribeAvailabilityZones",
                "ec2:DescribeSubnets",
                "ec2:DescribeSpotPriceHistory",
            ),
            pricing,
            # POST /sweep runs the health sweep in the request, so the api reads what the sweep reads.
            *_sweep_grants(arns),
        ],
        "select_gpu": [
            _describe(
                "Amazon EC2",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeInstanceTypeOfferings",
                "ec2:DescribeSpotPriceHistory",
                "ec2:GetSpotPlacementScores",
                "ec2:DescribeSubnets",
                # Only read when no subnets are configured (the local cloud); harmless when deployed.
                "ec2:DescribeAvailabilityZones",
            ),
            Grant(actions=("servicequotas:GetServiceQuota",), resources=(arns.ec2_quotas,), reason=WHY_QUOTAS),
            pricing,
        ],
        "ensure_queue": [
            Grant(
                actions=(
                    "batch:CreateComputeEnvironment",
                    "batch:UpdateComputeEnvironment",
                    "batch:DeleteComputeEnvironment",
                ),
                resources=(arns.compute_environments,),
                reason=prefix_reason,
            ),
            # Queue calls are authorized against the queue and the compute environments they order.
            Grant(
                actions=("batch:CreateJobQueue", "batch:UpdateJobQueue", "batch:DeleteJobQueue"),
                resources=(arns.job_queues, arns.compute_environments),
                reason=prefix_reason,
            ),
            Grant(
                actions=("batch:TagResource",),
                resources=(arns.compute_environments, arns.job_queues),
                reason=prefix_reason,
            ),
            _describe("AWS Batch", "batch:DescribeComputeEnvironments", "batch:DescribeJobQueues"),
            Grant(actions=("iam:PassRole",), resources=(instance_role_arn,)),
            Grant(
                actions=("iam:CreateServiceLinkedRole",),
                resources=(arns.batch_service_linked_role,),
                conditions={"StringEquals": {"iam:AWSServiceName": "batch.amazonaws.com"}},
            ),
            # Batch validates the subnets, security groups and launch template with the caller's rights.
            _describe(
                "Amazon EC2",
                "ec2:DescribeSubnets",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeVpcs",
                "ec2:DescribeImages",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplates",
                "ec2:DescribeLaunchTemplateVersions",
            ),
            _describe("Amazon ECS", "ecs:DescribeClusters"),
            Grant(actions=("ecs:CreateCluster",), resources=("*",), reason=WHY_ECS_CLUSTER),
        ],
        "submit_job": [
            Grant(
                actions=("batch:RegisterJobDefinition",),
                resources=(arns.job_definitions,),
                reason=prefix_reason,
            ),
            Grant(
                actions=("batch:SubmitJob",),
                resources=(arns.job_definitions, arns.job_queues),
                reason=prefix_reason,
            ),
            Grant(
                actions=("batch:TagResource",),
                resources=(arns.job_definitions, arns.jobs),
                reason=f"{prefix_reason} {WHY_JOB_IDS}",
            ),
            _describe("AWS Batch", "batch:DescribeJobDefinitions"),
        ],
        "wait_for_job": [_describe("AWS Batch", "batch:DescribeJobs")],
        "job_events": [_describe("AWS Batch", "batch:DescribeJobs")],
        "diagnose": _sweep_grants(arns),
        "record_cost": [pricing, _describe("Amazon EC2", "ec2:DescribeSpotPriceHistory")],
        "record_failure": [_cancel_jobs(arns, "batch:TerminateJob")],
        "health_sweep": _sweep_grants(arns),
    }
