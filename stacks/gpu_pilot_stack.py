"""The GpuPilot stack: storage, GPU fleet prerequisites, Lambdas, workflow, API, events, alarms."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Environment, Stack
from constructs import Construct

from functions.shared import constants as c
from functions.shared.domain.teams.shares import scheduling_policy_name
from stacks.api import Api
from stacks.batch_fleet import BatchFleet, fair_share, team_gpus
from stacks.capacity_region import instance_role_name
from stacks.events import JobEvents
from stacks.functions import ControlPlaneFunctions
from stacks.hosts import HostsBucket
from stacks.observability import Observability
from stacks.permissions import Arns, Owned, function_grants
from stacks.settings import JOB_ROLE_NAME_PREFIX, LAUNCH_TEMPLATE_NAME, RESOURCE_PREFIX, DeploySettings
from stacks.storage import Storage
from stacks.workflow import Workflow

# The zones of these subnets are where GPUs can launch, so these Lambdas judge availability by them.
NEEDS_SUBNETS = ("api", "select_gpu", "ensure_queue")
# Selection weighs the regions a request names, else these.
NEEDS_DEFAULT_REGIONS = ("api", "select_gpu")
# Selection offers Graviton GPUs only when provisioning can give them an NVIDIA AMI.
NEEDS_ARM64_AMI = ("api", "select_gpu", "ensure_queue")


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
            # No account unless the caller's credentials name one: ARNs then use AWS::AccountId.
            env=Environment(account=settings.account, region=settings.region),
            description="GPU Pilot: serverless control plane for CUDA batch jobs on AWS Batch",
            **kwargs,
        )
        capacity_regions = tuple(settings.capacity_regions)
        arns = Arns(prefix=RESOURCE_PREFIX, regions=capacity_regions)
        secret_arns = [arns.secrets(settings.job_secrets_prefix), arns.parameters(settings.job_secrets_prefix)]
        storage = Storage(self, "Storage")
        fleet = BatchFleet(
            self,
            "BatchFleet",
            zones=settings.zones,
            secret_arns=secret_arns,
            secrets_prefix=settings.job_secrets_prefix,
            gpu_boot_check=settings.gpu_boot_check,
            home_region=settings.region,
        )
        hosts = HostsBucket(self, "Hosts", checkpoint_retention_days=settings.checkpoint_retention_days)

        environment: dict[str, dict[str, str]] = {
            # Every Lambda knows the prefix: IAM only lets them touch Batch resources named with it.
            spec.key: {c.ENV_RESOURCE_PREFIX: RESOURCE_PREFIX}
            for spec in c.LAMBDAS
        }
        subnets = ",".join(fleet.private_subnet_ids)
        for key in NEEDS_SUBNETS:
            environment[key][c.ENV_SUBNETS] = subnets
        if capacity_regions:
            for spec in c.LAMBDAS:
                # Every function may act in a capacity region: the one an attempt, a pool or a sweep is in.
                environment[spec.key][c.ENV_CAPACITY_REGIONS] = ",".join(capacity_regions)
            for key in NEEDS_SUBNETS:
                environment[key][c.ENV_REGION_PARAMETER] = c.REGION_PARAMETER
        if settings.default_regions:
            for key in NEEDS_DEFAULT_REGIONS:
                environment[key][c.ENV_DEFAULT_REGIONS] = ",".join(settings.default_regions)
        if settings.arm64_gpu_ami_id:
            for key in NEEDS_ARM64_AMI:
                environment[key][c.ENV_ARM64_GPU_AMI_ID] = settings.arm64_gpu_ami_id
        environment["ensure_queue"] |= {
            c.ENV_SECURITY_GROUPS: fleet.security_group.security_group_id,
            c.ENV_INSTANCE_PROFILE_ARN: fleet.instance_profile.attr_arn,
            c.ENV_LAUNCH_TEMPLATE_NAME: LAUNCH_TEMPLATE_NAME,
            c.ENV_MAX_VCPUS: str(settings.max_vcpus_per_pool),
        }
        environment["submit_job"] |= {
            c.ENV_JOB_ROLE_ARN: fleet.job_role.role_arn,
            c.ENV_JOB_EXECUTION_ROLE_ARN: fleet.job_execution_role.role_arn,
            c.ENV_HOSTS_BUCKET: hosts.bucket.bucket_name,
        }
        # The api refuses, at submit, what the submit function could not pass or the execution role not read.
        environment["api"] |= {
            c.ENV_JOB_ROLE_PATTERN: arns.role(f"{JOB_ROLE_NAME_PREFIX}*"),
            c.ENV_SECRET_ARN_PATTERNS: ",".join(secret_arns),
        }
        if settings.allow_capacity_block_purchase:
            environment["api"][c.ENV_MAX_CAPACITY_BLOCK_UPFRONT_USD] = f"{settings.max_capacity_block_upfront_usd:g}"
        if settings.teams is not None:
            # The api says who may do what; the sweep settles what the jobs it fails held of their teams' budgets.
            for key in ("api", "health_sweep"):
                environment[key][c.ENV_TEAMS] = settings.teams_json()
        team_gpus(self, settings.capped_teams)
        shares = settings.shares
        if fair_share(self, settings.teams) is not None:
            # Pools are created with the region's policy, and each job is submitted with its team as its share.
            for key in ("ensure_queue", "submit_job"):
                environment[key][c.ENV_FAIR_SHARE_POLICY] = scheduling_policy_name(RESOURCE_PREFIX)

        functions = ControlPlaneFunctions(
            self, "Functions", code_dir=lambda_code_dir, table_name=storage.table.table_name, environment=environment
        )
        sweep = functions.functions["health_sweep"]
        functions.grant(
            function_grants(
                arns,
                Owned(
                    table=storage.table.table_arn,
                    table_indexes=tuple(storage.index_arns),
                    instance_role=fleet.instance_role.role_arn,
                    job_role=fleet.job_role.role_arn,
                    job_execution_role=fleet.job_execution_role.role_arn,
                    sweep_function=sweep.function_arn,
                    region_instance_roles=tuple(instance_role_name(region) for region in capacity_regions),
                ),
                allow_purchase=settings.allow_capacity_block_purchase,
                capped_teams=bool(settings.capped_teams),
                shares=shares,
            )
        )
        workflow = Workflow(self, "Workflow", asl_file=asl_file, functions=functions.functions)
        api_function = functions.functions["api"]
        api_function.add_environment(c.ENV_STATE_MACHINE_ARN, workflow.state_machine.state_machine_arn)
        api_function.add_environment(c.ENV_SWEEP_FUNCTION, sweep.function_name)
        # A GPU host that failed jobs of enough different jobs gets a sweep at once (job_events starts it).
        functions.functions["job_events"].add_environment(c.ENV_SWEEP_FUNCTION, sweep.function_name)
        api = Api(self, "Api", handler=api_function, retain_cloudwatch_role=settings.api_gateway_cloudwatch_role)
        JobEvents(self, "Events", job_events=functions.functions["job_events"], health_sweep=sweep)
        observability = Observability(
            self,
            "Observability",
            functions=functions.functions,
            failure_queues=functions.failure_queues,
            state_machine=workflow.state_machine,
            alarm_email=settings.alarm_email,
        )

        CfnOutput(self, "ApiUrl", value=api.url, description="Base URL of the GPU Pilot API (SigV4)")
        CfnOutput(self, "StateMachineArn", value=workflow.state_machine.state_machine_arn)
        CfnOutput(self, "TableName", value=storage.table.table_name)
        CfnOutput(self, "HostsBucket", value=hosts.bucket.bucket_name)
        CfnOutput(self, "AlarmTopicArn", value=observability.topic.topic_arn)
        CfnOutput(self, "JobRoleArn", value=fleet.job_role.role_arn, description="Default role of GPU jobs")
