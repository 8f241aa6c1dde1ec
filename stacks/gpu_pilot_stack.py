"""The GpuPilot stack: storage, GPU fleet prerequisites, Lambdas, workflow, API, events, alarms."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Environment, Stack
from aws_cdk.region_info import RegionInfo
from constructs import Construct

from functions.shared.constants import (
    ENV_ARM64_GPU_AMI_ID,
    ENV_INSTANCE_PROFILE_ARN,
    ENV_LAUNCH_TEMPLATE_NAME,
    ENV_MAX_VCPUS,
    ENV_RESOURCE_PREFIX,
    ENV_SECURITY_GROUPS,
    ENV_STATE_MACHINE_ARN,
    ENV_SUBNETS,
    LAMBDAS,
)
from stacks.api import Api
from stacks.batch_fleet import BatchFleet
from stacks.events import JobEvents
from stacks.functions import ControlPlaneFunctions
from stacks.observability import Observability
from stacks.permissions import Arns, function_grants
from stacks.settings import LAUNCH_TEMPLATE_NAME, RESOURCE_PREFIX, DeploySettings
from stacks.storage import Storage
from stacks.workflow import Workflow

# The zones of these subnets are where GPUs can launch, so these Lambdas judge availability by them.
NEEDS_SUBNETS = ("api", "select_gpu", "ensure_queue", "diagnose", "health_sweep")


class GpuPilotStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: DeploySettings,
        lambda_code_dir: Path,
        asl_file: Path,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            env=Environment(account=settings.account, region=settings.region),
            description="GPU Pilot: serverless control plane for CUDA batch jobs on AWS Batch",
            **kwargs,
        )
        storage = Storage(self, "Storage")
        fleet = BatchFleet(self, "BatchFleet", zones=settings.zones)

        subnets = ",".join(fleet.private_subnet_ids)
        environment: dict[str, dict[str, str]] = {
            # Every Lambda knows the prefix: IAM only lets them touch Batch resources named with it.
            spec.key: {ENV_RESOURCE_PREFIX: RESOURCE_PREFIX}
            for spec in LAMBDAS
        }
        for key in NEEDS_SUBNETS:
            environment[key][ENV_SUBNETS] = subnets
        if settings.arm64_gpu_ami_id:
            # Selection offers Graviton GPUs only when provisioning can give them an NVIDIA AMI.
            for key in ("api", "select_gpu", "ensure_queue"):
                environment[key][ENV_ARM64_GPU_AMI_ID] = settings.arm64_gpu_ami_id
        environment["ensure_queue"].update(
            {
                ENV_SECURITY_GROUPS: fleet.security_group.security_group_id,
                ENV_INSTANCE_PROFILE_ARN: fleet.instance_profile.attr_arn,
                ENV_LAUNCH_TEMPLATE_NAME: LAUNCH_TEMPLATE_NAME,
                ENV_MAX_VCPUS: str(settings.max_vcpus_per_pool),
            }
        )

        # Literal ARNs (not partition tokens) so the IAM5 acknowledgements name the exact findings.
        arns = Arns(
            partition=RegionInfo.get(settings.region).partition or "aws",
            region=settings.region,
            account=settings.account,
            prefix=RESOURCE_PREFIX,
        )
        functions = ControlPlaneFunctions(
            self,
            "Functions",
            code_dir=lambda_code_dir,
            region=settings.region,
            table_name=storage.table.table_name,
            table_resources=storage.data_resources,
            grants=function_grants(arns, instance_role_arn=fleet.instance_role.role_arn),
            environment=environment,
        )
        workflow = Workflow(self, "Workflow", asl_file=asl_file, functions=functions.functions, arns=arns)
        functions.functions["api"].add_environment(ENV_STATE_MACHINE_ARN, workflow.state_machine.state_machine_arn)
        api = Api(self, "Api", handler=functions.functions["api"])
        JobEvents(
            self,
            "Events",
            job_events=functions.functions["job_events"],
            health_sweep=functions.functions["health_sweep"],
        )
        observability = Observability(
            self,
            "Observability",
            functions=functions.functions,
            state_machine=workflow.state_machine,
            alarm_email=settings.alarm_email,
        )

        CfnOutput(self, "ApiUrl", value=api.url, description="Base URL of the GPU Pilot API (SigV4)")
        CfnOutput(self, "StateMachineArn", value=workflow.state_machine.state_machine_arn)
        CfnOutput(self, "TableName", value=storage.table.table_name)
        CfnOutput(self, "AlarmTopicArn", value=observability.topic.topic_arn)
