"""The deployed stack's IAM, enforced in the local cloud.

moto authorizes every call; AWS authorizes each against the caller's role. Here every AWS call a
function makes (through functions.shared.adapters.clients) is mapped to the IAM actions and resources
AWS would authorize it against (including what AWS checks without a call of its own: iam:PassRole for
the roles a call passes, batch:TagResource for tags given at creation), and checked against the policy
the synthesized template attaches to that function's role. A call the template does not allow fails with
AccessDenied, as it would in AWS, naming the function, the action, the resource and the call site; every
decision can be logged (GPUPILOT_AWS_CALL_LOG, a directory) for the IAM drift check of the test suite.
"""

from __future__ import annotations

import fnmatch
import json
import os
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from gpupilot.localcloud.dispatch import current_function

CALL_LOG_ENV = "GPUPILOT_AWS_CALL_LOG"
# IAM action names that are not `<signing name>:<operation>`.
ACTION_NAMES = {("lambda", "Invoke"): "lambda:InvokeFunction"}
CREATED_WITH_TAGS = {"CreateComputeEnvironment", "CreateJobQueue", "RegisterJobDefinition", "SubmitJob"}


@dataclass(frozen=True)
class Statement:
    """One Allow statement of a role's policy, its resources resolved to local ARNs."""

    actions: tuple[str, ...]
    resources: tuple[str, ...]

    def allows(self, action: str, resource: str) -> bool:
        return any(fnmatch.fnmatchcase(action.lower(), a.lower()) for a in self.actions) and any(
            fnmatch.fnmatchcase(resource, r) for r in self.resources
        )


@dataclass(frozen=True)
class Decision:
    function: str
    action: str
    resource: str
    allowed: bool
    site: str


def statements_of(document: Mapping[str, Any], resolve: Callable[[Any], Any]) -> list[Statement]:
    """The Allow statements of a policy document, resources resolved (an unresolvable one matches nothing)."""
    found = []
    for statement in document.get("Statement", []):
        if statement.get("Effect") != "Allow":
            continue
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        raw = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        found.append(Statement(tuple(actions), tuple(str(resolve(r)) for r in raw)))
    return found


class Arn:
    """ARNs in the local cloud's account and region."""

    def __init__(self, region: str, account: str, partition: str = "aws") -> None:
        self.region, self.account, self.partition = region, account, partition

    def __call__(self, service: str, kind: str, name: str) -> str:
        """The ARN of a resource given by name (`kind/name`, or `kind:name`) or already by ARN."""
        if name.startswith("arn:"):
            return name
        return f"arn:{self.partition}:{service}:{self.region}:{self.account}:{kind}{name}"


def required(
    service: str,
    signing_name: str,
    operation: str,
    params: Mapping[str, Any],
    arn: Arn,
    roles_of_profile: Callable[[str], Sequence[str]],
) -> list[tuple[str, str]]:
    """(IAM action, resource) pairs AWS authorizes this call against: the call's own, then the implicit ones."""
    action = ACTION_NAMES.get((service, operation), f"{signing_name}:{operation}")
    checks: list[tuple[str, str]] = []
    if service == "dynamodb" and "TableName" in params:
        table = arn("dynamodb", "table/", params["TableName"])
        checks.append((action, f"{table}/index/{params['IndexName']}" if params.get("IndexName") else table))
    elif service == "batch":
        checks.extend((action, resource) for resource in _batch_resources(operation, params, arn))
        created = _batch_resources(operation, params, arn)[:1]
        if operation in CREATED_WITH_TAGS and params.get("tags") and created:
            checks.append(("batch:TagResource", created[0]))
        container = params.get("containerProperties") or {}
        for role in (container.get("jobRoleArn"), container.get("executionRoleArn"), params.get("serviceRole")):
            if role:
                checks.append(("iam:PassRole", role))
        profile = (params.get("computeResources") or {}).get("instanceRole")
        for role in roles_of_profile(profile) if profile else ():
            checks.append(("iam:PassRole", role))
    elif service == "stepfunctions" and operation == "StartExecution":
        machine = params["stateMachineArn"]
        execution = machine.replace(":stateMachine:", ":execution:") + f":{params.get('name', 'new')}"
        checks += [(action, machine), ("states:DescribeExecution", execution)]
    elif service == "stepfunctions" and "executionArn" in params:
        checks.append((action, params["executionArn"]))
    elif service == "ec2" and operation == "TerminateInstances":
        checks.extend((action, arn("ec2", "instance/", instance)) for instance in params["InstanceIds"])
    elif service == "ecs" and operation == "DescribeContainerInstances":
        cluster = arn("ecs", "cluster/", params["cluster"])
        checks.extend((action, arn("ecs", f"container-instance/{cluster.rsplit('/', 1)[1]}/", instance))
                      for instance in params["containerInstances"])  # fmt: skip
    elif service == "ecs" and "cluster" in params:
        checks.append((action, arn("ecs", "cluster/", params["cluster"])))
    elif service == "service-quotas" and "QuotaCode" in params:
        checks.append((action, arn("servicequotas", f"{params['ServiceCode']}/", params["QuotaCode"])))
    elif service == "lambda" and "FunctionName" in params:
        checks.append((action, arn("lambda", "function:", params["FunctionName"])))
    else:
        checks.append((action, "*"))
    return checks


def _batch_resources(operation: str, params: Mapping[str, Any], arn: Arn) -> list[str]:
    if operation == "SubmitJob":
        return [
            arn("batch", "job/", "new"),
            arn("batch", "job-queue/", params["jobQueue"]),
            arn("batch", "job-definition/", params["jobDefinition"]),
        ]
    if operation == "RegisterJobDefinition":
        return [arn("batch", "job-definition/", params["jobDefinitionName"])]
    if operation in ("CreateComputeEnvironment", "UpdateComputeEnvironment", "DeleteComputeEnvironment"):
        name = params.get("computeEnvironmentName") or params.get("computeEnvironment") or ""
        return [arn("batch", "compute-environment/", name)]
    if operation == "CreateJobQueue":
        order = params["computeEnvironmentOrder"]
        environments = [arn("batch", "compute-environment/", entry["computeEnvironment"]) for entry in order]
        return [arn("batch", "job-queue/", params["jobQueueName"]), *environments]
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


class IamEnforcer:
    """A botocore `before-parameter-build` handler: authorizes each call of a function against its role."""

    def __init__(
        self,
        policies: Mapping[str, list[Statement]],
        arn: Arn,
        roles_of_profile: Callable[[str], Sequence[str]] = lambda _profile: (),
        log_dir: Path | None = None,
    ) -> None:
        self.policies = policies
        self.arn = arn
        self.roles_of_profile = roles_of_profile
        self.decisions: list[Decision] = []
        self._log = log_dir / f"calls-{os.getpid()}-{id(self)}.jsonl" if log_dir else None
        self._seen: set[tuple[str, str, str, bool]] = set()
        self._lock = threading.Lock()

    @classmethod
    def log_dir_from_environment(cls) -> Path | None:
        value = os.environ.get(CALL_LOG_ENV)
        return Path(value) if value else None

    def __call__(self, params: Mapping[str, Any], model: Any, **_: Any) -> None:
        function = current_function.get()
        if function is None or function not in self.policies:
            return  # not a deployed function's call (the local cloud's own, or a test's setup)
        service_model = model.service_model
        checks = required(
            service_model.service_name, service_model.signing_name, model.name, params, self.arn, self.roles_of_profile
        )
        site = call_site()
        for action, resource in checks:
            allowed = any(statement.allows(action, resource) for statement in self.policies[function])
            self._record(Decision(function, action, resource, allowed, site))
            if not allowed:
                message = (
                    f"{function} is not authorized to perform: {action} on resource: {resource} "
                    f"(its role in the synthesized template grants no such permission; called at {site})"
                )
                raise ClientError({"Error": {"Code": "AccessDeniedException", "Message": message}}, model.name)

    def _record(self, decision: Decision) -> None:
        key = (decision.function, decision.action, decision.resource, decision.allowed)
        with self._lock:
            self.decisions.append(decision)
            if self._log is None or key in self._seen:
                return
            self._seen.add(key)
            with self._log.open("a") as log:
                log.write(json.dumps(asdict(decision)) + "\n")


def enforcer_for(policies: Mapping[str, list[Statement]], profile_roles: Mapping[str, list[str]], region: str,
                 account: str, log_dir: Path | None = None) -> IamEnforcer:  # fmt: skip
    """An enforcer of a local deployment's policies (see deploy.Deployment)."""
    from gpupilot.localcloud.template import partition_of

    return IamEnforcer(
        policies, Arn(region, account, partition_of(region)), lambda profile: profile_roles.get(profile, ()), log_dir
    )
