"""What AWS authorizes each call against: the call's own IAM action and the implicit ones (iam:PassRole,
batch:TagResource, ec2:CreateTags, ...), each on its resource's ARN with the condition keys AWS presents."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gpupilot.localcloud.iam.conditions import PolicyError, Request

# IAM action names that are not `<signing name>:<operation>`.
ACTION_NAMES = {("lambda", "Invoke"): "lambda:InvokeFunction"}
# A transaction's items, each authorized as the single write it stands for.
TRANSACTION_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}
CREATED_WITH_TAGS = {"CreateComputeEnvironment", "CreateJobQueue", "RegisterJobDefinition", "SubmitJob"}
# The iam:PassedToService a role passed through a Batch call presents: Batch's own service principal (the
# Service Authorization Reference for AWS Batch lists batch.amazonaws.com among the values of
# CreateComputeEnvironment's iam:PassRole; a policy that allows only ecs-tasks.amazonaws.com is reported to
# refuse RegisterJobDefinition's job and execution roles).
PASSED_TO_SERVICE = {"batch": "batch.amazonaws.com"}
# Service-linked roles by the service principal they serve: each has a fixed name under the
# /aws-service-role/<service>/ path (AWS Batch User Guide, "Using service-linked roles for AWS Batch": its role is
# arn:aws:iam::<account>:role/aws-service-role/batch.amazonaws.com/AWSServiceRoleForBatch).
SERVICE_LINKED_ROLES = {"batch.amazonaws.com": "AWSServiceRoleForBatch"}


# EC2 calls that create a resource with the tags of their TagSpecifications: the resource type they create. AWS
# authorizes the call on the new resource (its id unknown: `<type>/*` matches it) with aws:RequestTag/<key>, and the
# tagging on ec2:CreateTags with ec2:CreateAction naming the call ("Grant permission to tag Amazon EC2 resources
# during creation", Amazon EC2 User Guide).
EC2_CREATED_WITH_TAGS = {"CreateLaunchTemplate": "launch-template", "PurchaseCapacityBlock": "capacity-reservation"}


class Arn:
    """ARNs in the local cloud's account and region."""

    def __init__(self, region: str, account: str, partition: str = "aws") -> None:
        self.region, self.account, self.partition = region, account, partition

    def in_region(self, region: str | None) -> Arn:
        """The ARNs of a call to `region`'s endpoint (a capacity region's Batch, ECS, EC2): AWS authorizes a call
        against the resources of the region it is made in."""
        return self if region is None or region == self.region else Arn(region, self.account, self.partition)

    def __call__(self, service: str, kind: str, name: str) -> str:
        """The ARN of a resource given by name (`kind/name`, or `kind:name`) or already by ARN."""
        if name.startswith("arn:"):
            return name
        return f"arn:{self.partition}:{service}:{self.region}:{self.account}:{kind}{name}"

    def service_linked_role(self, service: str) -> str:
        """The ARN of `service`'s service-linked role (IAM is global: no region)."""
        if service not in SERVICE_LINKED_ROLES:
            raise PolicyError(f"the local cloud does not know the name of {service}'s service-linked role")
        path = f"role/aws-service-role/{service}/{SERVICE_LINKED_ROLES[service]}"
        return f"arn:{self.partition}:iam::{self.account}:{path}"


ResourceTags = Callable[[str], Mapping[str, str] | None]
RoleExists = Callable[[str], bool]


def required(
    service: str,
    signing_name: str,
    operation: str,
    params: Mapping[str, Any],
    arn: Arn,
    roles_of_profile: Callable[[str], Sequence[str]],
    resource_tags: ResourceTags = lambda _arn: None,
    role_exists: RoleExists = lambda _arn: True,
) -> list[Request]:
    """What AWS authorizes this call against: the call's own action, then the implicit ones, each with the
    resource and the condition keys AWS presents (an action without resource types is authorized on `*`);
    `role_exists` says whether a role is in the account (unknown: assumed there, so nothing is asked of it)."""
    action = ACTION_NAMES.get((service, operation), f"{signing_name}:{operation}")
    checks: list[Request] = []
    if service == "dynamodb" and operation == "TransactWriteItems":
        # Each item is authorized as its own write: "Permissions for Put, Update, Delete, and Get actions are
        # governed by the permissions used for the underlying PutItem, UpdateItem, DeleteItem, and GetItem
        # operations" (Using IAM with DynamoDB transactions).
        for item in params["TransactItems"]:
            kind, write = next(iter(item.items()))
            table = arn("dynamodb", "table/", write["TableName"])
            checks.append(Request(f"dynamodb:{TRANSACTION_ACTIONS[kind]}", table))
    elif service == "dynamodb" and operation == "BatchGetItem":
        checks.extend(Request(action, arn("dynamodb", "table/", table)) for table in params["RequestItems"])
    elif service == "dynamodb" and "TableName" in params:
        table = arn("dynamodb", "table/", params["TableName"])
        checks.append(Request(action, f"{table}/index/{params['IndexName']}" if params.get("IndexName") else table))
    elif service == "batch":
        # SubmitJob presents its share identifier as batch:ShareIdentifier (AWS Batch User Guide, "Resource: Use the
        # batch:ShareIdentifier condition key").
        shared = {"batch:ShareIdentifier": str(params["shareIdentifier"])} if params.get("shareIdentifier") else {}
        checks.extend(Request(action, resource, shared) for resource in _batch_resources(operation, params, arn))
        created = _batch_resources(operation, params, arn)[:1]
        if operation in CREATED_WITH_TAGS and params.get("tags") and created:
            checks.append(Request("batch:TagResource", created[0]))
        container = params.get("containerProperties") or {}
        profile = (params.get("computeResources") or {}).get("instanceRole")
        roles = [container.get("jobRoleArn"), container.get("executionRoleArn"), params.get("serviceRole")]
        passed = {"iam:PassedToService": PASSED_TO_SERVICE["batch"]}
        checks.extend(Request("iam:PassRole", role, passed) for role in roles if role)
        checks.extend(Request("iam:PassRole", role, passed) for role in (roles_of_profile(profile) if profile else ()))
        # "If the Batch service-linked role doesn't exist in your account, and no role is specified here, the service
        # attempts to create the Batch service-linked role in your account" (CreateComputeEnvironment, serviceRole),
        # a MANAGED compute environment only (AWS Batch User Guide, "Using service-linked roles for AWS Batch"): with
        # the caller's iam:CreateServiceLinkedRole, iam:AWSServiceName being the service the role is created for.
        managed = operation == "CreateComputeEnvironment" and params.get("type") == "MANAGED"
        linked = arn.service_linked_role(PASSED_TO_SERVICE["batch"])
        if managed and not params.get("serviceRole") and not role_exists(linked):
            checks.append(
                Request("iam:CreateServiceLinkedRole", linked, {"iam:AWSServiceName": PASSED_TO_SERVICE["batch"]})
            )
    elif service == "stepfunctions" and operation == "StartExecution":
        machine = params["stateMachineArn"]
        execution = machine.replace(":stateMachine:", ":execution:") + f":{params.get('name', 'new')}"
        checks += [Request(action, machine), Request("states:DescribeExecution", execution)]
    elif service == "stepfunctions" and "executionArn" in params:
        checks.append(Request(action, params["executionArn"]))
    elif service == "ec2" and operation in ("TerminateInstances", "GetConsoleOutput"):
        # Authorized per instance, with the tags the instance carries (ec2:ResourceTag/..., aws:ResourceTag/...).
        ids = params["InstanceIds"] if operation == "TerminateInstances" else [params["InstanceId"]]
        instances = [arn("ec2", "instance/", instance) for instance in ids]
        checks.extend(Request(action, instance, tags=resource_tags(instance)) for instance in instances)
    elif service == "ec2" and operation in EC2_CREATED_WITH_TAGS:
        new = arn("ec2", f"{EC2_CREATED_WITH_TAGS[operation]}/", "new")
        tags = {
            f"aws:RequestTag/{tag['Key']}": str(tag.get("Value", ""))
            for spec in params.get("TagSpecifications") or []
            for tag in spec.get("Tags") or []
        }
        checks.append(Request(action, new, tags))
        if tags:
            checks.append(Request("ec2:CreateTags", new, tags | {"ec2:CreateAction": operation}))
    elif service == "ecs" and operation in ("DescribeContainerInstances", "UpdateContainerInstancesState"):
        # Authorized on each container instance named (container-instance/<cluster name>/<id>).
        cluster = arn("ecs", "cluster/", params["cluster"])
        checks.extend(Request(action, arn("ecs", f"container-instance/{cluster.rsplit('/', 1)[1]}/", instance))
                      for instance in params["containerInstances"])  # fmt: skip
    elif service == "ecs" and "cluster" in params:
        checks.append(Request(action, arn("ecs", "cluster/", params["cluster"])))
    elif service == "iam" and operation == "CreateServiceLinkedRole":
        # Authorized on the role it creates (resource type role), with the service it serves as iam:AWSServiceName.
        linked = arn.service_linked_role(params["AWSServiceName"])
        checks.append(Request(action, linked, {"iam:AWSServiceName": params["AWSServiceName"]}))
    elif service == "ssm" and "Name" in params:
        # A parameter's ARN is `parameter/<name>`; a hierarchical name's leading `/` is that slash.
        checks.append(Request(action, arn("ssm", "parameter/", str(params["Name"]).lstrip("/"))))
    elif service == "logs" and "logStreamName" in params:
        # Authorized against the stream (Service Authorization Reference for CloudWatch Logs: GetLogEvents).
        group = params.get("logGroupName") or params.get("logGroupIdentifier") or ""
        checks.append(Request(action, arn("logs", "log-group:", f"{group}:log-stream:{params['logStreamName']}")))
    elif service == "lambda" and "FunctionName" in params:
        checks.append(Request(action, arn("lambda", "function:", params["FunctionName"])))
    else:
        # Among them servicequotas:GetServiceQuota: it has no resource types, so AWS authorizes it on `*`.
        checks.append(Request(action, "*"))
    return checks


def _batch_resources(operation: str, params: Mapping[str, Any], arn: Arn) -> list[str]:
    if operation == "SubmitJob":
        return [
            arn("batch", "job/", "new"),
            arn("batch", "job-queue/", params["jobQueue"]),
            arn("batch", "job-definition/", params["jobDefinition"]),
        ]
    if operation == "RegisterJobDefinition":
        # Also authorized on each consumable resource the definition names (Service Authorization Reference for AWS
        # Batch: RegisterJobDefinition, resource type consumable-resource).
        listed = (params.get("consumableResourceProperties") or {}).get("consumableResourceList") or []
        named = [str(entry["consumableResource"]).rsplit("/", 1)[-1] for entry in listed]
        return [
            arn("batch", "job-definition/", params["jobDefinitionName"]),
            *(arn("batch", "consumable-resource/", name) for name in named),
        ]
    if operation in ("DescribeConsumableResource", "ListJobsByConsumableResource"):
        return [arn("batch", "consumable-resource/", str(params["consumableResource"]).rsplit("/", 1)[-1])]
    if operation in ("CreateComputeEnvironment", "UpdateComputeEnvironment", "DeleteComputeEnvironment"):
        name = params.get("computeEnvironmentName") or params.get("computeEnvironment") or ""
        return [arn("batch", "compute-environment/", name)]
    if operation == "CreateJobQueue":
        order = params["computeEnvironmentOrder"]
        environments = [arn("batch", "compute-environment/", entry["computeEnvironment"]) for entry in order]
        # And against its scheduling policy (Service Authorization Reference for AWS Batch: CreateJobQueue).
        policy = params.get("schedulingPolicyArn")
        policies = [arn("batch", "scheduling-policy/", str(policy).rsplit("/", 1)[-1])] if policy else []
        return [arn("batch", "job-queue/", params["jobQueueName"]), *environments, *policies]
    if operation in ("UpdateJobQueue", "DeleteJobQueue"):
        environments = [
            arn("batch", "compute-environment/", entry["computeEnvironment"])
            for entry in params.get("computeEnvironmentOrder") or []
        ]
        return [arn("batch", "job-queue/", params["jobQueue"]), *environments]
    if operation in ("TerminateJob", "CancelJob"):
        return [arn("batch", "job/", params["jobId"])]
    return ["*"]
