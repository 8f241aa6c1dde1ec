"""One factory for every Lambda of the control plane, driven by constants.LAMBDAS."""

from __future__ import annotations

import compileall
import py_compile
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import jsii
from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from functions.shared.constants import (
    ENV_TABLE,
    LAMBDAS,
    METRICS_NAMESPACE,
    RUNTIME_ENVIRONMENT,
    SERVICE_NAME,
    LambdaSpec,
)
from stacks.nag import CHECKOV_ACKNOWLEDGMENTS, Kind, WildcardLedger, acknowledge, acknowledge_checkov
from stacks.permissions import Grant
from stacks.queues import last_resort_queue
from stacks.settings import LOG_RETENTION, POWERTOOLS_LAYER_PARAMETER

WHY_XRAY = (
    "Active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords have no resource types in IAM, "
    "so Lambda's tracing grant is on Resource '*'."
)
WHY_FAILURE_QUEUE_HAS_NO_DLQ = (
    "This queue is itself the on-failure destination of an asynchronously invoked function: records land "
    "here after Lambda's own retries, an alarm watches its depth, and a queue behind it would only move them again."
)
WHY_PYTHON_311 = (
    "Pinned to Python 3.11: the project targets 3.11 (pyproject requires-python, CI venv) and the "
    "Powertools public layer used here is the python311 build; moving runtimes means moving both."
)


def stage_lambda_code(source: Path, build_root: Path) -> Path:
    """Copy the `functions` package under build_root, so handler paths `functions.<name>.handler.handler`
    resolve, without fingerprinting the repository (and its virtualenv) as the asset.

    The copy ships its bytecode: Lambda's code directory is read-only, so Python could never cache what it
    compiles there, and every cold start would compile the whole package again. Hash-based .pyc files stay
    valid whatever the zip does to timestamps, and are the same for the same source (the asset's hash too).
    """
    if build_root.exists():
        shutil.rmtree(build_root)
    shutil.copytree(source, build_root / source.name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    compiled = compileall.compile_dir(
        build_root, quiet=1, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH
    )
    if not compiled:
        raise RuntimeError(f"the Lambda code in {build_root} does not compile")
    return build_root


def construct_name(key: str) -> str:
    """`select_gpu` -> `SelectGpu`: readable construct ids and logical ids."""
    return "".join(part.capitalize() for part in key.split("_"))


@jsii.implements(lambda_.IDestination)
class FailureQueueDestination:
    """Lambda's on-failure destination on an SQS queue, granting the role only sqs:SendMessage (Lambda sends
    the failure record with the function's role; CDK's SqsDestination would also grant GetQueueUrl and
    GetQueueAttributes, which nothing uses)."""

    def __init__(self, queue: sqs.IQueue) -> None:
        self._queue = queue

    def bind(
        self, scope: Construct, fn: lambda_.IFunction, *, type: lambda_.DestinationType | None = None
    ) -> lambda_.DestinationConfig:
        fn.add_to_role_policy(iam.PolicyStatement(actions=["sqs:SendMessage"], resources=[self._queue.queue_arn]))
        return lambda_.DestinationConfig(destination=self._queue.queue_arn)


class ControlPlaneFunctions(Construct):
    """Every Lambda in constants.LAMBDAS, each with its own role and log group; `grant` gives each its table."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        code_dir: Path,
        table_name: str,
        environment: Mapping[str, Mapping[str, str]],
    ) -> None:
        super().__init__(scope, construct_id)
        unknown = set(environment) - {spec.key for spec in LAMBDAS}
        if unknown:
            raise ValueError(f"environment for Lambdas not in constants.LAMBDAS: {sorted(unknown)}")

        self._code = lambda_.Code.from_asset(str(code_dir))
        layer_arn = ssm.StringParameter.value_for_string_parameter(self, POWERTOOLS_LAYER_PARAMETER)
        self._powertools = lambda_.LayerVersion.from_layer_version_arn(self, "PowertoolsLayer", layer_arn)
        self._base_environment = {
            ENV_TABLE: table_name,
            "POWERTOOLS_SERVICE_NAME": SERVICE_NAME,
            "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
            "POWERTOOLS_LOG_LEVEL": "INFO",
            **RUNTIME_ENVIRONMENT,
        }
        self.functions: dict[str, lambda_.Function] = {}
        self.roles: dict[str, iam.Role] = {}
        # Where an asynchronous invocation's error lands after Lambda's retries, instead of being lost.
        self.failure_queues: dict[str, sqs.Queue] = {}
        for spec in LAMBDAS:
            self.functions[spec.key] = self._create(spec, environment=environment.get(spec.key, {}))

    def grant(self, grants: Mapping[str, Sequence[Grant]]) -> None:
        """Give each function exactly its grants (stacks/permissions.py), acknowledging each wildcard once."""
        unknown = set(grants) - set(self.functions)
        if unknown:
            raise ValueError(f"grants for Lambdas not in constants.LAMBDAS: {sorted(unknown)}")
        for key, role in self.roles.items():
            ledger = WildcardLedger(role)
            ledger.add((), ("*",), WHY_XRAY)
            for grant in grants.get(key, ()):
                if grant.has_wildcard() and not grant.reason:
                    raise ValueError(f"{key}: a wildcard grant {grant.actions} needs a reason")
                role.add_to_policy(
                    iam.PolicyStatement(
                        actions=list(grant.actions),
                        resources=list(grant.resources),
                        conditions=dict(grant.conditions) if grant.conditions else None,
                    )
                )
                ledger.add(grant.actions, grant.resources, grant.reason)
            ledger.acknowledge_on(role)

    def _create(self, spec: LambdaSpec, *, environment: Mapping[str, str]) -> lambda_.Function:
        name = construct_name(spec.key)
        log_group = logs.LogGroup(self, f"{name}Logs", retention=LOG_RETENTION)
        acknowledge_checkov(log_group, Kind.LOG_GROUP)
        # An own role instead of the default one: the default attaches the AWSLambdaBasicExecutionRole
        # managed policy (logs on every group), this one writes to its own log group only.
        role = iam.Role(
            self,
            f"{name}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"GPU Pilot {spec.key} Lambda",
        )
        log_group.grant_write(role)
        self.roles[spec.key] = role

        on_failure = None
        if spec.invoked_async:
            queue = last_resort_queue(self, f"{name}Failures", WHY_FAILURE_QUEUE_HAS_NO_DLQ)
            self.failure_queues[spec.key] = queue
            on_failure = FailureQueueDestination(queue)
        function = lambda_.Function(
            self,
            name,
            description=spec.description,
            runtime=lambda_.Runtime.PYTHON_3_11,
            architecture=lambda_.Architecture.X86_64,
            handler=spec.handler,
            code=self._code,
            timeout=Duration.seconds(spec.timeout_seconds),
            memory_size=spec.memory_mb,
            # Lambda's own tracing, not the Powertools Tracer: the X-Ray SDK import costs ~0.8 s of
            # cold start (measured, DESIGN.md) and the segments Lambda emits are enough here.
            tracing=lambda_.Tracing.ACTIVE,
            layers=[self._powertools],
            log_group=log_group,
            role=role,
            environment={**self._base_environment, **environment},
            on_failure=on_failure,
            retry_attempts=2 if spec.invoked_async else None,
        )
        acknowledge(function, "AwsSolutions-L1", WHY_PYTHON_311)
        acknowledge(function, "Serverless-LambdaLatestVersion", WHY_PYTHON_311)
        invocation = Kind.ASYNCHRONOUS_FUNCTION if spec.invoked_async else Kind.SYNCHRONOUS_FUNCTION
        acknowledge(function, "Serverless-LambdaDLQ", CHECKOV_ACKNOWLEDGMENTS[invocation]["CKV_AWS_116"])
        acknowledge_checkov(function, Kind.FUNCTION)
        acknowledge_checkov(function, invocation)
        return function
