"""The GpuJob state machine, from the ASL file the local cloud runs too."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from aws_cdk import Aws, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from functions.shared.constants import LAMBDAS, STACK_NAME, STATE_MACHINE_NAME
from stacks.nag import Kind, acknowledge, acknowledge_checkov
from stacks.settings import LOG_RETENTION

# Substitutions the ASL takes besides the Lambdas' ARNs.
PARTITION = "Partition"

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9_]+)\}")

WHY_SFN_LOGS_AND_XRAY = (
    "Step Functions logging uses the CloudWatch Logs vended-delivery APIs (logs:CreateLogDelivery, "
    "logs:DescribeResourcePolicies...) and tracing uses xray:PutTraceSegments; none has resource types "
    "in IAM, so CDK grants them on Resource '*'."
)


def asl_placeholders(asl: str) -> set[str]:
    """The `${Name}` substitutions an ASL document expects."""
    return set(_PLACEHOLDER.findall(asl))


def definition_substitutions(asl: str, functions: Mapping[str, lambda_.IFunction]) -> dict[str, str]:
    """Each ASL substitution -> its value (Lambda ARNs, the partition); fails synth when they disagree."""
    provided = {spec.substitution: spec.key for spec in LAMBDAS if spec.substitution}
    expected = asl_placeholders(asl) - {PARTITION}
    missing = sorted(expected - provided.keys())
    unused = sorted(provided.keys() - expected)
    if missing or unused:
        raise ValueError(
            "statemachines ASL and constants.LAMBDAS disagree: "
            f"placeholders without a Lambda {missing}, Lambda substitutions the ASL never uses {unused}"
        )
    return {name: functions[key].function_arn for name, key in provided.items()} | {PARTITION: Aws.PARTITION}


class Workflow(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        asl_file: Path,
        functions: Mapping[str, lambda_.Function],
    ) -> None:
        super().__init__(scope, construct_id)
        asl = asl_file.read_text(encoding="utf-8")
        substitutions = definition_substitutions(asl, functions)
        invoked = [spec.key for spec in LAMBDAS if spec.substitution]

        log_group = logs.LogGroup(
            self,
            "Logs",
            # The vendedlogs prefix keeps Step Functions from growing the account's log resource policy.
            log_group_name=f"/aws/vendedlogs/states/{STACK_NAME}-{STATE_MACHINE_NAME}",
            retention=LOG_RETENTION,
            removal_policy=RemovalPolicy.DESTROY,
        )
        acknowledge_checkov(log_group, Kind.LOG_GROUP)
        self.state_machine = sfn.StateMachine(
            self,
            "GpuJob",
            state_machine_name=STATE_MACHINE_NAME,
            state_machine_type=sfn.StateMachineType.STANDARD,
            # from_string keeps the ASL inline in the template (no asset bucket), readable by the local cloud.
            definition_body=sfn.DefinitionBody.from_string(asl),
            definition_substitutions=substitutions,
            # Every state transition is logged, but not the data: a job's request (its environment) stays
            # out of CloudWatch Logs. The console still shows each execution's input and output.
            logs=sfn.LogOptions(destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=False),
            tracing_enabled=True,
        )
        # Exactly the unqualified ARNs the ASL names: no `:*` versions or aliases.
        self.state_machine.add_to_role_policy(
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"],
                resources=[functions[key].function_arn for key in invoked],
            )
        )
        acknowledge(self.state_machine.role, "AwsSolutions-IAM5[Resource::*]", WHY_SFN_LOGS_AND_XRAY)
