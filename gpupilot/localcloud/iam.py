"""The deployed stack's IAM, enforced in the local cloud.

moto authorizes every call; AWS authorizes each against the caller's role. Here every AWS call a
function makes (through functions.shared.adapters.clients) is mapped to the IAM actions and resources
AWS would authorize it against (including what AWS checks without a call of its own: iam:PassRole for
the roles a call passes, batch:TagResource for tags given at creation), with the condition keys AWS
presents for it (iam:PassedToService, the tags an EC2 instance really carries), and checked against the
policy the synthesized template attaches to that function's role as AWS evaluates it: an explicit Deny
wins, an Allow applies only when its action, resource and every condition match. A call the template does
not allow fails with AccessDenied, as it would in AWS, naming the function, the action, the resource and
the call site; a policy the local cloud cannot evaluate as AWS would (an operator or key it does not know)
fails the deployment instead of being guessed. Every decision can be logged (GPUPILOT_AWS_CALL_LOG, a
directory), with the request it authorized and the policies it was decided against, for the IAM drift check of
the test suite.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import itertools
import json
import os
import re
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from gpupilot.localcloud.dispatch import current_function

CALL_LOG_ENV = "GPUPILOT_AWS_CALL_LOG"
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


class PolicyError(ValueError):
    """A policy the local cloud cannot evaluate the way AWS would: refused loudly, never guessed allowed."""


# Condition keys the local cloud presents with AWS's values: per-call keys (absent from a call that has
# none, as in AWS), and the tags of the resource a call names. Each per-call key is derived from the request as the
# Service Authorization Reference defines it: iam:AWSServiceName "filters access by the AWS service to which this role
# is attached" (IAM's page: CreateServiceLinkedRole, the service principal the role is created for); ec2:CreateAction
# "filters access by the name of a resource-creating API action" (EC2's page: the ec2:CreateTags that tagging at
# creation authorizes names the call that creates, e.g. CreateLaunchTemplate); iam:PassedToService, the service a
# role is passed to (PASSED_TO_SERVICE).
# The host agent's calls present s3:ListBucket's prefix, PutEvents' source and PutMetricData's namespace
# (stacks/hosts.py); a fair-share queue's SubmitJob presents batch:ShareIdentifier.
REQUEST_KEYS = {"iam:passedtoservice", "iam:awsservicename", "ec2:createaction", "s3:prefix", "events:source",
                "cloudwatch:namespace", "batch:shareidentifier"}  # fmt: skip
RESOURCE_TAG_KEYS = ("ec2:resourcetag/", "aws:resourcetag/")
# The tags a creating call asks for (aws:RequestTag/<key>): per-call keys too.
REQUEST_TAG_KEY = "aws:requesttag/"
# EC2 calls that create a resource with the tags of their TagSpecifications: the resource type they create. AWS
# authorizes the call on the new resource (its id unknown: `<type>/*` matches it) with aws:RequestTag/<key>, and the
# tagging on ec2:CreateTags with ec2:CreateAction naming the call ("Grant permission to tag Amazon EC2 resources
# during creation", Amazon EC2 User Guide).
EC2_CREATED_WITH_TAGS = {"CreateLaunchTemplate": "launch-template", "PurchaseCapacityBlock": "capacity-reservation"}
# IAM's condition operators the local cloud evaluates (each also with ...IfExists): (kind, negated).
OPERATORS = {
    "StringEquals": ("equals", False),
    "StringNotEquals": ("equals", True),
    "StringEqualsIgnoreCase": ("equals-ignore-case", False),
    "StringNotEqualsIgnoreCase": ("equals-ignore-case", True),
    "StringLike": ("like", False),
    "StringNotLike": ("like", True),
    "ArnEquals": ("arn", False),
    "ArnLike": ("arn", False),
    "ArnNotEquals": ("arn", True),
    "ArnNotLike": ("arn", True),
}


@functools.lru_cache(maxsize=4096)
def _wildcard(pattern: str, ignore_case: bool = False) -> re.Pattern[str]:
    """IAM's wildcards: `*` any run of characters, `?` any one; everything else literal (unlike fnmatch's [])."""
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(f"(?s:{body})\\Z", re.IGNORECASE if ignore_case else 0)


def matches(pattern: str, value: str, ignore_case: bool = False) -> bool:
    return _wildcard(pattern, ignore_case).match(value) is not None


def arn_matches(pattern: str, value: str) -> bool:
    """ArnLike/ArnEquals: each of the six colon-delimited parts compared on its own, wildcards within a part."""
    wanted, given = pattern.split(":", 5), value.split(":", 5)
    return len(wanted) == len(given) == 6 and all(matches(w, g) for w, g in zip(wanted, given, strict=True))


@dataclass(frozen=True)
class Request:
    """One authorization AWS makes for a call: the action, the resource, and the condition keys it presents
    (`tags`: the resource's tags; None when the local cloud does not know them)."""

    action: str
    resource: str
    context: Mapping[str, str] = field(default_factory=dict)
    tags: Mapping[str, str] | None = None

    def value(self, key: str) -> str | None:
        """The request context's value of a condition key (names are case-insensitive), None when absent."""
        lowered = key.lower()
        for prefix in RESOURCE_TAG_KEYS:
            if lowered.startswith(prefix):
                if self.tags is None:
                    raise PolicyError(f"{key}: the local cloud does not know the tags of {self.resource}")
                tag = lowered.removeprefix(prefix)
                return next((v for k, v in self.tags.items() if k.lower() == tag), None)
        return next((v for k, v in self.context.items() if k.lower() == lowered), None)

    def with_value(self, key: str, value: str) -> Request:
        """The same request with condition key `key` set to `value` (a resource tag key sets the resource's tag)."""
        lowered = key.lower()
        for prefix in RESOURCE_TAG_KEYS:
            if lowered.startswith(prefix):
                tag = key[len(prefix) :]
                kept = {k: v for k, v in (self.tags or {}).items() if k.lower() != tag.lower()}
                return replace(self, tags=kept | {tag: value})
        kept = {k: v for k, v in self.context.items() if k.lower() != lowered}
        return replace(self, context=kept | {key: value})

    def as_json(self) -> dict[str, Any]:
        return {"action": self.action, "resource": self.resource, "context": dict(self.context),
                "tags": None if self.tags is None else dict(self.tags)}  # fmt: skip

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Request:
        return cls(data["action"], data["resource"], dict(data.get("context") or {}), data.get("tags"))


@dataclass(frozen=True)
class Condition:
    """One key of one operator of a statement's Condition block."""

    operator: str
    key: str
    values: tuple[str, ...]

    @classmethod
    def parse(cls, operator: str, key: str, values: Any) -> Condition:
        base = operator.removesuffix("IfExists")
        if base not in OPERATORS:
            raise PolicyError(f"condition operator {operator} is not evaluated by the local cloud")
        lowered = key.lower()
        if lowered not in REQUEST_KEYS and not lowered.startswith((*RESOURCE_TAG_KEYS, REQUEST_TAG_KEY)):
            raise PolicyError(f"condition key {key} is not presented by the local cloud")
        listed = tuple(str(v) for v in (values if isinstance(values, list) else [values]))
        if any("${" in v for v in listed):
            raise PolicyError(f"condition {operator} {key}: policy variables are not evaluated by the local cloud")
        return cls(operator, key, listed)

    def holds(self, request: Request) -> bool:
        """AWS's rule: a key absent from the request makes the condition false, or true for a negated operator
        (and true for ...IfExists); the policy's values for one key are alternatives."""
        kind, negated = OPERATORS[self.operator.removesuffix("IfExists")]
        value = request.value(self.key)
        if value is None:
            return negated or self.operator.endswith("IfExists")
        if kind == "arn":
            found = any(arn_matches(v, value) for v in self.values)
        elif kind == "like":
            found = any(matches(v, value) for v in self.values)
        elif kind == "equals-ignore-case":
            found = value.lower() in {v.lower() for v in self.values}
        else:
            found = value in self.values
        return found != negated

    def refusing(self, value: str | None) -> str | None:
        """A value of its key this condition refuses, derived from `value` (the one a call presented): what a call
        outside the grant would present instead; None when no value is refused (e.g. StringLike "*")."""
        _kind, negated = OPERATORS[self.operator.removesuffix("IfExists")]
        if negated:
            candidates = [v.replace("*", "x").replace("?", "x") for v in self.values]
        else:
            given = value or "gpupilot"
            candidates = [f"outside-{given}", f"{given}-outside", "outside", "arn:aws:iam::000000000000:role/outside"]
        probe = Request("probe", "*")
        return next((c for c in candidates if not self.holds(probe.with_value(self.key, c))), None)

    def describe(self) -> str:
        return f"{self.operator} {self.key} {list(self.values)}"


@dataclass(frozen=True)
class Statement:
    """One statement of a role's policy, its resources resolved to local ARNs."""

    actions: tuple[str, ...]
    resources: tuple[str, ...]
    effect: str = "Allow"
    conditions: tuple[Condition, ...] = ()

    def applies(self, request: Request) -> bool:
        """Action (case-insensitive), resource and every condition match."""
        return (
            any(matches(a, request.action, ignore_case=True) for a in self.actions)
            and any(matches(r, request.resource) for r in self.resources)
            and all(condition.holds(request) for condition in self.conditions)
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "effect": self.effect,
            "actions": list(self.actions),
            "resources": list(self.resources),
            "conditions": [[c.operator, c.key, list(c.values)] for c in self.conditions],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Statement:
        return cls(
            actions=tuple(data["actions"]),
            resources=tuple(data["resources"]),
            effect=data["effect"],
            conditions=tuple(Condition(op, key, tuple(values)) for op, key, values in data["conditions"]),
        )


def authorize(statements: Sequence[Statement], request: Request) -> str | None:
    """AWS's evaluation within one policy set: an explicit Deny wins, then an Allow; None means allowed,
    otherwise why not."""
    if any(s.effect == "Deny" and s.applies(request) for s in statements):
        return "with an explicit deny in its role's policy"
    if any(s.effect == "Allow" and s.applies(request) for s in statements):
        return None
    return "(its role in the synthesized template grants no such permission)"


@dataclass(frozen=True)
class Decision:
    function: str
    action: str
    resource: str
    allowed: bool
    site: str
    # Refused on purpose: a test proving what a grant does not allow (the drift check counts no missing grant).
    expected: bool = False
    # The condition keys the request presented, and the resource's tags (None: not known).
    context: Mapping[str, str] = field(default_factory=dict)
    tags: Mapping[str, str] | None = None
    # Which logged policies decided it (policies-<deployment>.json beside the log).
    deployment: str = ""


_expecting_refusal: contextvars.ContextVar[bool] = contextvars.ContextVar("gpupilot_expecting_refusal", default=False)


@contextlib.contextmanager
def expecting_refusal() -> Iterator[None]:
    """Calls made in this block that IAM refuses are refused on purpose (a test of a grant's limits)."""
    token = _expecting_refusal.set(True)
    try:
        yield
    finally:
        _expecting_refusal.reset(token)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def statements_of(document: Mapping[str, Any], resolve: Callable[[Any], Any]) -> list[Statement]:
    """The statements of a policy document, resources resolved (an unresolvable one matches nothing).
    What the local cloud cannot evaluate as AWS would (NotAction, an unknown condition) is a PolicyError."""
    found = []
    for statement in document.get("Statement", []):
        unsupported = {"NotAction", "NotResource", "NotPrincipal", "Principal"} & set(statement)
        if unsupported or statement.get("Effect") not in ("Allow", "Deny"):
            raise PolicyError(f"statement {statement} uses {sorted(unsupported) or 'an unknown Effect'}")
        conditions = tuple(
            Condition.parse(operator, key, resolve(values))
            for operator, keys in (statement.get("Condition") or {}).items()
            for key, values in keys.items()
        )
        found.append(
            Statement(
                actions=tuple(_listed(statement["Action"])),
                resources=tuple(str(resolve(r)) for r in _listed(statement["Resource"])),
                effect=statement["Effect"],
                conditions=conditions,
            )
        )
    return found


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


def call_site() -> str:
    """The innermost frame of GPU Pilot's own functions code that made the call."""
    for frame in reversed(traceback.extract_stack()):
        if "/functions/" in frame.filename and not frame.filename.endswith("adapters/clients.py"):
            return f"{frame.filename.split('/functions/', 1)[1]}:{frame.lineno} in {frame.name}"
    return "unknown"


_enforcers = itertools.count()


class IamEnforcer:
    """A botocore `before-parameter-build` handler: authorizes each call of a function against its role."""

    def __init__(
        self,
        policies: Mapping[str, list[Statement]],
        arn: Arn,
        roles_of_profile: Callable[[str], Sequence[str]] = lambda _profile: (),
        log_dir: Path | None = None,
        resource_tags: ResourceTags = lambda _arn: None,
        role_exists: RoleExists = lambda _arn: True,
    ) -> None:
        self.policies = policies
        self.arn = arn
        self.roles_of_profile = roles_of_profile
        self.resource_tags = resource_tags
        self.role_exists = role_exists
        self.decisions: list[Decision] = []
        self._log = log_dir / f"calls-{os.getpid()}-{next(_enforcers)}.jsonl" if log_dir else None
        self.deployment = self._log_policies(log_dir) if log_dir else ""
        self._seen: set[tuple[Any, ...]] = set()
        self._lock = threading.Lock()

    @classmethod
    def log_dir_from_environment(cls) -> Path | None:
        value = os.environ.get(CALL_LOG_ENV)
        return Path(value) if value else None

    def _log_policies(self, log_dir: Path) -> str:
        """The policies this enforcer decides by, logged once per distinct set (named by their digest)."""
        document = json.dumps(
            {function: [s.as_json() for s in statements] for function, statements in sorted(self.policies.items())},
            sort_keys=True,
        )
        digest = hashlib.sha256(document.encode()).hexdigest()[:16]
        path = log_dir / f"policies-{digest}.json"
        if not path.exists():
            partial = path.with_suffix(f".{os.getpid()}.{id(self)}.tmp")
            partial.write_text(document)
            partial.replace(path)  # whole or absent, whichever process writes it
        return digest

    def __call__(
        self, params: Mapping[str, Any], model: Any, context: Mapping[str, Any] | None = None, **_: Any
    ) -> None:
        function = current_function.get()
        if function is None or function not in self.policies:
            return  # not a deployed function's call (the local cloud's own, or a test's setup)
        service_model = model.service_model
        checks = required(
            service_model.service_name,
            service_model.signing_name,
            model.name,
            params,
            self.arn.in_region((context or {}).get("client_region")),
            self.roles_of_profile,
            self.resource_tags,
            self.role_exists,
        )
        site = call_site()
        for check in checks:
            refusal = authorize(self.policies[function], check)
            expected = refusal is not None and _expecting_refusal.get()
            decision = Decision(
                function, check.action, check.resource, refusal is None, site, expected,
                dict(check.context), None if check.tags is None else dict(check.tags), self.deployment,
            )  # fmt: skip
            self._record(decision)
            if refusal is not None:
                message = (
                    f"{function} is not authorized to perform: {check.action} on resource: {check.resource} "
                    f"{refusal} (called at {site})"
                )
                raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": message}}, model.name)

    def _record(self, decision: Decision) -> None:
        presented = json.dumps([decision.context, decision.tags], sort_keys=True)
        key = (decision.function, decision.action, decision.resource, decision.allowed, decision.expected, presented)
        with self._lock:
            self.decisions.append(decision)
            if self._log is None or key in self._seen:
                return
            self._seen.add(key)
            with self._log.open("a") as log:
                log.write(json.dumps(asdict(decision)) + "\n")


def moto_resource_tags(account: str, region: str) -> ResourceTags:
    """The tags AWS presents for a resource, read from the embedded moto: EC2 instances' (None: not known), in
    whichever region the instance's ARN names (`region`: the home one)."""

    def tags(resource: str) -> Mapping[str, str] | None:
        parts = resource.split(":", 5)
        kind, _, name = parts[-1].partition("/")
        if len(parts) < 6 or parts[2] != "ec2" or parts[4] != account or kind != "instance":
            return None
        from moto.ec2.models import ec2_backends

        return dict(ec2_backends[account][parts[3] or region].tags.get(name, {}))

    return tags


def moto_role_exists(account: str) -> RoleExists:
    """Whether the embedded moto's IAM holds the role of an ARN: its path and name, the name compared without case
    (moto names Batch's service-linked role AWSServiceRoleForbatch where AWS says AWSServiceRoleForBatch)."""

    def exists(role_arn: str) -> bool:
        from moto.iam.models import iam_backends

        partition, resource = role_arn.split(":")[1], role_arn.split(":", 5)[-1]
        path, _, name = resource.removeprefix("role").rpartition("/")
        return any(
            role.path == f"{path}/" and role.name.lower() == name.lower()
            for role in iam_backends[account][partition].get_roles()
        )

    return exists


def enforcer_for(policies: Mapping[str, list[Statement]], profile_roles: Mapping[str, list[str]], region: str,
                 account: str, log_dir: Path | None = None) -> IamEnforcer:  # fmt: skip
    """An enforcer of a local deployment's policies (see deploy.Deployment), reading resource tags and roles from
    moto."""
    from gpupilot.localcloud.template import partition_of

    return IamEnforcer(
        policies,
        Arn(region, account, partition_of(region)),
        lambda profile: profile_roles.get(profile, ()),
        log_dir,
        moto_resource_tags(account, region),
        moto_role_exists(account),
    )
