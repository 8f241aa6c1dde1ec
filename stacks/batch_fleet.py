"""What GPU compute environments need before the ensure_queue Lambda can create them at run time.

Compute environments and job queues are not declared here: they are pooled by (instance types,
capacity, arch) and created or retired by the control plane, because Batch allows only 50 of each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Fn, Stack
from aws_cdk import aws_batch as batch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from functions.shared.adapters.ec2 import load_snapshot
from functions.shared.domain.fleet.userdata import AgentInstall, gpu_user_data
from functions.shared.domain.teams.caps import gpu_resource_name
from functions.shared.domain.teams.config import TeamsConfig
from functions.shared.domain.teams.shares import fairshare_policy, scheduling_policy_name
from host_agent import package
from stacks.hosts import HOSTS_BUCKET_PREFIX, agent_statements
from stacks.nag import Kind, WildcardLedger, acknowledge, acknowledge_checkov, wildcard_findings
from stacks.settings import (
    IMDS_HOP_LIMIT,
    LAUNCH_TEMPLATE_NAME,
    LOG_RETENTION,
    RESOURCE_PREFIX,
    ROOT_DEVICE_NAME,
    ROOT_VOLUME_GIB,
)

# The id of the provider CDK adds once per stack for the @aws-cdk/aws-ec2:restrictDefaultSecurityGroup feature flag.
RESTRICT_DEFAULT_SG_PROVIDER = "Custom::VpcRestrictDefaultSGCustomResourceProvider"

WHY_SECRETS_PREFIX = (
    "Jobs reference secrets by ARN at submit time (request `secrets`); the execution role may read only "
    "those under the deployment's secrets prefix ({prefix}), and the api refuses any other ARN."
)

WHY_AGENT_GRANTS = (
    "The host agent's grants (stacks/hosts.py): objects under the hosts bucket's agent/ and checkpoints/ prefixes, "
    "whose names are the agent's digest and the jobs' ids, known only at run time; cloudwatch:PutMetricData has no "
    "resource type and is held to GPU Pilot's namespace by cloudwatch:namespace."
)


class BatchFleet(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        zones: Sequence[str],
        secret_arns: Sequence[str],
        secrets_prefix: str,
        job_roles: bool = True,
        instance_role_name: str | None = None,
        gpu_boot_check: bool = True,
        home_region: str,
    ) -> None:
        """`job_roles`: also the jobs' own roles (the home region's: IAM is global, every region's jobs use them);
        `instance_role_name`: a name the home region's functions can grant iam:PassRole on without a reference;
        `home_region`: where the hosts bucket and the control plane's bus are (stacks/hosts.py)."""
        super().__init__(scope, construct_id)

        flow_logs = logs.LogGroup(self, "FlowLogs", retention=LOG_RETENTION)
        acknowledge_checkov(flow_logs, Kind.LOG_GROUP)
        # GPU instances live in private subnets but must reach the ECS and Batch endpoints: without a
        # route the ECS agent never registers and jobs sit in RUNNABLE forever. One NAT gateway gives
        # that route at the lowest cost; interface endpoints for ECS would cost more per zone than the
        # NAT for a fleet that is idle most of the time.
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            availability_zones=list(zones),
            nat_gateways=1,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24),
                ec2.SubnetConfiguration(name="gpu", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=20),
            ],
            # The registration failures the sweep diagnoses are often network ones: keep the evidence.
            flow_logs={
                "All": ec2.FlowLogOptions(
                    destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs),
                    traffic_type=ec2.FlowLogTrafficType.ALL,
                )
            },
        )
        # The VPC's default security group is stripped of its rules by a function CDK adds to the stack.
        restrict_default_group = Stack.of(self).node.try_find_child(RESTRICT_DEFAULT_SG_PROVIDER)
        if restrict_default_group is not None:
            acknowledge_checkov(restrict_default_group.node.find_child("Handler"), Kind.DEPLOYMENT_FUNCTION)
        self.private_subnet_ids: list[str] = self.vpc.select_subnets(
            subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS
        ).subnet_ids

        self.security_group = ec2.SecurityGroup(
            self,
            "GpuInstances",
            vpc=self.vpc,
            description="GPU Pilot Batch instances: no inbound, outbound to ECS, Batch, ECR and images",
            allow_all_outbound=True,
        )

        self.instance_role = iam.Role(
            self,
            "InstanceRole",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            role_name=instance_role_name,
            description="GPU Pilot Batch container instances",
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name("service-role/AmazonEC2ContainerServiceforEC2Role"),
                iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSSMManagedInstanceCore"),
            ],
        )
        acknowledge(
            self.instance_role,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AmazonEC2ContainerServiceforEC2Role]",
            "The ECS agent on Batch-managed instances needs exactly this AWS-maintained policy to "
            "register, pull images and send logs; AWS updates it as the agent gains features.",
        )
        acknowledge(
            self.instance_role,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSSMManagedInstanceCore]",
            "Session Manager is how an operator inspects an instance whose ECS agent never registered "
            "(no SSH, no inbound rules); this AWS-maintained policy is the documented minimum for it.",
        )
        stack = Stack.of(self)
        ledger = WildcardLedger(self.instance_role)
        for statement in agent_statements(stack.partition, stack.account, home_region):
            self.instance_role.add_to_policy(statement)
            ledger.add(statement.actions, statement.resources, WHY_AGENT_GRANTS)
        ledger.acknowledge_on(self.instance_role)
        self.instance_profile = iam.CfnInstanceProfile(self, "InstanceProfile", roles=[self.instance_role.role_name])
        agent = AgentInstall(package.bootstrap_source(), package.digest(), HOSTS_BUCKET_PREFIX, home_region)
        self.launch_template = self._launch_template(gpu_boot_check, agent)
        if job_roles:
            self._job_roles(secret_arns, secrets_prefix)

    def _job_roles(self, secret_arns: Sequence[str], secrets_prefix: str) -> None:
        # Jobs run as their own role, never the instance's (IMDS is out of a container's reach, hop limit 1):
        # by default this one, with no permissions; a request may name a role of its own (gpupilot-job-*).
        self.job_role = iam.Role(
            self,
            "JobRole",
            assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
            description="GPU Pilot jobs' default role: no AWS permissions unless you add them",
        )
        # ECS reads a job's secrets with the execution role and sets them in the container: no secret value
        # passes through GPU Pilot, its workflow input or its logs.
        self.job_execution_role = iam.Role(
            self,
            "JobExecutionRole",
            assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
            description="GPU Pilot jobs' execution role: reads the secrets jobs reference",
        )
        self.job_execution_role.add_to_policy(
            iam.PolicyStatement(
                actions=["secretsmanager:GetSecretValue", "ssm:GetParameters"], resources=list(secret_arns)
            )
        )
        for finding in wildcard_findings(self, (), secret_arns):
            acknowledge(self.job_execution_role, finding, WHY_SECRETS_PREFIX.format(prefix=secrets_prefix))

    def _launch_template(self, gpu_boot_check: bool, agent: AgentInstall) -> ec2.CfnLaunchTemplate:
        return ec2.CfnLaunchTemplate(
            self,
            "GpuLaunchTemplate",
            launch_template_name=LAUNCH_TEMPLATE_NAME,
            launch_template_data=ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(
                # Batch merges this MIME part with its own user data, which sets ECS_CLUSTER. The boot check knows
                # how many GPUs each type has from the bundled catalog.
                user_data=Fn.base64(
                    gpu_user_data(
                        {t: gpu.gpus for t, gpu in load_snapshot().items()}, boot_check=gpu_boot_check, agent=agent
                    )
                ),
                metadata_options=ec2.CfnLaunchTemplate.MetadataOptionsProperty(
                    http_endpoint="enabled",
                    http_tokens="required",
                    http_put_response_hop_limit=IMDS_HOP_LIMIT,
                ),
                block_device_mappings=[
                    ec2.CfnLaunchTemplate.BlockDeviceMappingProperty(
                        device_name=ROOT_DEVICE_NAME,
                        ebs=ec2.CfnLaunchTemplate.EbsProperty(
                            encrypted=True,
                            volume_size=ROOT_VOLUME_GIB,
                            volume_type="gp3",
                            delete_on_termination=True,
                        ),
                    )
                ],
            ),
        )


def team_gpus(scope: Construct, capped: Mapping[str, int]) -> list[batch.CfnConsumableResource]:
    """Each capped team's GPU cap in this region, as AWS Batch enforces it: a replenishable consumable resource of
    max_gpus units, which every job of the team draws as many of as it has GPUs (its job definition names it), so
    Batch holds a job RUNNABLE while the team's running jobs hold the rest, across every queue of the region, even a
    job submitted to Batch around GPU Pilot with GPU Pilot's job definitions."""
    return [
        batch.CfnConsumableResource(
            scope,
            f"TeamGpus{name.replace('-', ' ').title().replace(' ', '')}",
            consumable_resource_name=gpu_resource_name(RESOURCE_PREFIX, name),
            resource_type="REPLENISHABLE",
            total_quantity=max_gpus,
        )
        for name, max_gpus in sorted(capped.items())
    ]


def fair_share(scope: Construct, teams: TeamsConfig | None) -> batch.CfnSchedulingPolicy | None:
    """The deployment's fair-share scheduling policy in this region, when it has teams: each pool's queue is created
    with it, so Batch starts the next job of a pool from the team whose usage is least for its weight (AWS Batch User
    Guide, "Use fair-share scheduling policies to assign share identifiers"). Without teams, none: pools stay FIFO."""
    if teams is None or not teams.teams:
        return None
    policy = fairshare_policy(teams)
    return batch.CfnSchedulingPolicy(
        scope,
        "FairShare",
        name=scheduling_policy_name(RESOURCE_PREFIX),
        fairshare_policy=batch.CfnSchedulingPolicy.FairsharePolicyProperty(
            share_decay_seconds=policy["shareDecaySeconds"],
            compute_reservation=policy["computeReservation"],
            share_distribution=[
                batch.CfnSchedulingPolicy.ShareAttributesProperty(
                    share_identifier=share["shareIdentifier"], weight_factor=share["weightFactor"]
                )
                for share in policy["shareDistribution"]
            ],
        ),
    )
