"""What each Lambda may do in AWS, as data: one table, reviewed in one place, proven by the IAM drift test.

Every grant here is either used by a call the tests record (tests/iam_drift.py maps each recorded AWS
call to its IAM action and checks the synthesized template grants it), or is an authorization AWS
checks without a call of its own (iam:PassRole, tag-on-create): those name the documentation that
requires them (`required_by`). Mutating Batch calls are scoped to this account, region and the
control plane's name prefix; read-only Describe/List calls that have no resource types in IAM are
granted on `*`, each saying so (a claim held to the Service Authorization Reference's table in
stacks/iam_reference.py), and that reason becomes its cdk-nag acknowledgement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from aws_cdk import Aws

from functions.shared.constants import GSI1_NAME, GSI2_LEGACY_NAME, GSI2_NAME, REGION_PARAMETER, STATE_MACHINE_NAME
from functions.shared.domain.jobs.definitions import JOB_LOG_GROUP, JOB_LOG_STREAM_PREFIX
from functions.shared.domain.pools.specs import POOL_TAG
from functions.shared.domain.reservations.reservation import PURCHASED_BY_TAG, RESERVATION_TAG
from functions.shared.domain.teams.shares import scheduling_policy_name
from stacks.iam_reference import resource_types

# How AWS Batch names a compute environment's ECS cluster: <compute environment name>_Batch_<uuid>.
BATCH_CLUSTER_INFIX = "_Batch_"

WHY_DESCRIBE = (
    "Read-only {service} calls ({actions}) have no resource types in the Service Authorization Reference, "
    "so they can only be granted on Resource '*'."
)
WHY_JOB_IDS = (
    "Batch assigns job ids at submit time, so job actions are scoped to this account and region's "
    "jobs (job/*) rather than to names known at deploy time."
)
WHY_PREFIX = (
    "Compute environments, job queues and job definitions are created at run time by the control "
    "plane, always named with the '{prefix}' prefix; the grant is scoped to that prefix."
)
WHY_JOB_ROLES = (
    "Jobs run as the stack's default job role or a role named {prefix}* that the request names; the "
    "submit function may pass only those (and the execution role that reads the jobs' secrets). The roles are "
    "passed through AWS Batch (RegisterJobDefinition), so the grant is scoped by the roles' ARNs and carries no "
    "iam:PassedToService condition, whatever service key Batch presents for that call: a grant conditioned on "
    "ecs-tasks.amazonaws.com alone is reported refused there, and the AWS Batch User Guide's example policy "
    "('Resource: Restrict to POSIX user, Docker image, privilege level, and role on job submission', "
    "https://docs.aws.amazon.com/batch/latest/userguide/iam-example-job-def.html) scopes the role by ARN with "
    "no condition. The submit function calls no other service that takes a role."
)
DOC_TAG_ON_CREATE = (
    "AWS Batch User Guide, 'Tag your resources on creation': to tag a resource when it is created "
    "(the tags of CreateComputeEnvironment, CreateJobQueue, RegisterJobDefinition and SubmitJob), the "
    "caller needs batch:TagResource on it as well as the create action."
)
DOC_PASS_INSTANCE_ROLE = (
    "AWS Batch User Guide, 'IAM policies, roles and permissions' / iam:PassRole: CreateComputeEnvironment "
    "passes the instance role of computeResources.instanceRole, so the caller needs iam:PassRole on it."
)
DOC_PASS_JOB_ROLES = (
    "AWS Batch User Guide, 'IAM policies, roles and permissions' / iam:PassRole: RegisterJobDefinition "
    "passes containerProperties.jobRoleArn and executionRoleArn, so the caller needs iam:PassRole on them."
)
DOC_SERVICE_LINKED_ROLE = (
    "AWS Batch API Reference, CreateComputeEnvironment serviceRole: 'If the Batch service-linked role doesn't "
    "exist in your account, and no role is specified here, the service attempts to create the Batch "
    "service-linked role in your account' (with the caller's iam:CreateServiceLinkedRole)."
)
DOC_SUBMIT_JOB_RESOURCES = (
    "Service Authorization Reference for AWS Batch: SubmitJob is authorized against the job (job/*, a new id) "
    "and the job queue, and optionally the job definition."
)
WHY_TASK_TOKENS = (
    "states:SendTaskSuccess has no resource types in the Service Authorization Reference for Step Functions "
    "(a task token names its execution), so it can only be granted on Resource '*'."
)
WHY_EXECUTIONS = (
    "Execution ARNs are created per job at run time; the grant is limited to executions of the GpuJob "
    "state machine (execution:GpuJob:*)."
)
DOC_DESCRIBE_ON_START = (
    "Service Authorization Reference for Step Functions, API operations: the StartExecution API authorizes "
    "states:StartExecution and states:DescribeExecution."
)
DOC_EC2_TAG_ON_CREATE = (
    "Amazon EC2 User Guide, 'Grant permission to tag Amazon EC2 resources during creation' "
    "(https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/supported-iam-actions-tagging.html): 'If tags are specified "
    "in the resource-creating action, Amazon performs additional authorization on the ec2:CreateTags action', "
    "conditioned on ec2:CreateAction."
)
WHY_RESERVATION_TEMPLATES = (
    "A pool bound to a Capacity Reservation or Capacity Block needs a launch template that targets it, made at run "
    "time (reservations are the account's, not the stack's): CreateLaunchTemplate is authorized on the new template, "
    "whose ARN carries an id EC2 assigns (launch-template/*), so the grant is held to templates created with the "
    "{tag} tag (aws:RequestTag)."
)
WHY_PURCHASE = (
    "PurchaseCapacityBlock is authorized on the capacity reservation it creates, whose id EC2 assigns "
    "(capacity-reservation/*): the grant is held to purchases that tag it {tag}=gpupilot (aws:RequestTag), and exists "
    "only in a deployment whose context sets a ceiling on them (max_capacity_block_upfront_usd); in every capacity "
    "region, "
    "where Capacity Blocks are listed and bought too."
)
WHY_JOB_LOGS = (
    "Batch names each attempt's log stream when it runs ('<awslogs-stream-prefix>/default/<ECS task id>', AWS Batch "
    "User Guide, 'Use the awslogs log driver'), so GetLogEvents, authorized on the log stream (Service "
    "Authorization Reference for CloudWatch Logs), is scoped to Batch's log group and the streams under GPU "
    "Pilot's stream prefix."
)
DOC_ON_FAILURE = (
    "AWS Lambda Developer Guide, 'Adding a destination': Lambda sends an asynchronous invocation's "
    "failure record with the function's execution role, which needs sqs:SendMessage on the queue."
)


@dataclass(frozen=True)
class Grant:
    """One IAM statement. `reason` says why a wildcard in it is unavoidable; `required_by` names the AWS
    documentation that requires it of the caller when no call of ours exercises it directly."""

    actions: tuple[str, ...]
    resources: tuple[str, ...]
    reason: str = ""
    conditions: Mapping[str, Any] | None = field(default=None)
    required_by: str = ""

    def has_wildcard(self) -> bool:
        return any("*" in item for item in (*self.actions, *self.resources))


@dataclass(frozen=True)
class Arns:
    """ARN patterns of what the control plane creates, in this account and region (pseudo parameters by
    default, so the template deploys into whichever account and region runs it); `regions`: the deployment's other
    capacity regions, each named (never `*`), where its pools' Batch, ECS and EC2 resources are too."""

    prefix: str
    partition: str = Aws.PARTITION
    region: str = Aws.REGION
    account: str = Aws.ACCOUNT_ID
    regions: tuple[str, ...] = ()

    def everywhere(self, pattern: str) -> tuple[str, ...]:
        """The ARN pattern `pattern` (a property: `jobs`, `job_queues`, ...) in this region and each capacity region."""
        return tuple(
            getattr(replace(self, region=region, regions=()), pattern) for region in (self.region, *self.regions)
        )

    def region_parameters(self, name: str) -> tuple[str, ...]:
        """SSM parameter `name` (a path from the root) in each capacity region other than this one."""
        return tuple(f"arn:{self.partition}:ssm:{region}:{self.account}:parameter{name}" for region in self.regions)

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
    def fair_share(self) -> str:
        """The deployment's fair-share scheduling policy, which the stack creates in each region."""
        return self._batch(f"scheduling-policy/{scheduling_policy_name(self.prefix)}")

    @property
    def team_gpus(self) -> str:
        """The teams' consumable resources (their GPU caps), which the stack creates with the prefix."""
        return self._batch(f"consumable-resource/{self.prefix}-team-*")

    def state_machine(self, name: str) -> str:
        return f"arn:{self.partition}:states:{self.region}:{self.account}:stateMachine:{name}"

    def executions(self, state_machine_name: str) -> str:
        return f"arn:{self.partition}:states:{self.region}:{self.account}:execution:{state_machine_name}:*"

    def role(self, name: str) -> str:
        return f"arn:{self.partition}:iam::{self.account}:role/{name}"

    def secrets(self, prefix: str) -> str:
        return f"arn:{self.partition}:secretsmanager:{self.region}:{self.account}:secret:{prefix}*"

    def parameters(self, prefix: str) -> str:
        return f"arn:{self.partition}:ssm:{self.region}:{self.account}:parameter/{prefix}*"

    @property
    def clusters(self) -> str:
        """The ECS clusters AWS Batch creates for the control plane's compute environments."""
        return f"arn:{self.partition}:ecs:{self.region}:{self.account}:cluster/{self.prefix}*{BATCH_CLUSTER_INFIX}*"

    @property
    def container_instances(self) -> str:
        """The container instances of those clusters (`container-instance/<cluster name>/<id>`)."""
        cluster = f"{self.prefix}*{BATCH_CLUSTER_INFIX}*"
        return f"arn:{self.partition}:ecs:{self.region}:{self.account}:container-instance/{cluster}/*"

    @property
    def instances(self) -> str:
        return f"arn:{self.partition}:ec2:{self.region}:{self.account}:instance/*"

    @property
    def launch_templates(self) -> str:
        return f"arn:{self.partition}:ec2:{self.region}:{self.account}:launch-template/*"

    @property
    def capacity_reservations(self) -> str:
        return f"arn:{self.partition}:ec2:{self.region}:{self.account}:capacity-reservation/*"

    def service_linked_role(self, service: str, name: str) -> str:
        return f"arn:{self.partition}:iam::{self.account}:role/aws-service-role/{service}/{name}"

    @property
    def job_log_streams(self) -> str:
        """The log streams of GPU Pilot's jobs: Batch's log group, streams under the job definitions' prefix."""
        group = f"arn:{self.partition}:logs:{self.region}:{self.account}:log-group:{JOB_LOG_GROUP}"
        return f"{group}:log-stream:{JOB_LOG_STREAM_PREFIX}/*"

    def function(self, name: str) -> str:
        return f"arn:{self.partition}:lambda:{self.region}:{self.account}:function:{name}"


def describe(service: str, *actions: str) -> Grant:
    """Read-only calls without resource types: on `*`, with the reason cdk-nag is told (a claim checked
    against the Service Authorization Reference: an action it gives resource types is refused here)."""
    scoped = {action: resource_types(action) for action in actions if resource_types(action)}
    if scoped:
        raise ValueError(f"{scoped} have resource types (stacks/iam_reference.py): scope them, not '*'")
    short = ", ".join(action.split(":", 1)[1] for action in actions)
    return Grant(actions=actions, resources=("*",), reason=WHY_DESCRIBE.format(service=service, actions=short))


# The GPU vCPU quotas (EC2's only): GetServiceQuota has no resource types, so a grant on the quotas' ARNs
# would be refused by AWS.
GPU_QUOTAS = describe("Service Quotas", "servicequotas:GetServiceQuota")

# Who resumes parked task tokens: the Lambda that parks them, the Batch event handler, the sweep (which
# replays Batch events the rule missed), and the diagnosis (a job that started as its wait timed out).
RESUME_WAITS = Grant(actions=("states:SendTaskSuccess",), resources=("*",), reason=WHY_TASK_TOKENS)


WHY_CLUSTERS = (
    "AWS Batch creates the ECS cluster of a compute environment and names it after it, "
    "'<compute environment name>_Batch_<uuid>' (AWS Batch API Reference, DescribeComputeEnvironments example: "
    "P2OnDemand's cluster is P2OnDemand_Batch_2c06f29d-...), so fleet reads and deregistrations are scoped to the "
    "clusters of compute environments named with the control plane's prefix, and their container instances."
)
WHY_POOL_INSTANCES = (
    "Batch names the instances it launches; only those carrying GPU Pilot's pool tag ({tag}={prefix}-*, which "
    "Batch propagates from the compute environment) may be terminated."
)
WHY_CONSOLES = (
    "Batch names the instances it launches; only the console output of those carrying GPU Pilot's pool tag "
    "({tag}={prefix}-*) may be read: what an instance that never registered, or failed its boot GPU check, printed."
)


def console_output(arns: Arns) -> Grant:
    """Reading a pool instance's console output (ec2:GetConsoleOutput is authorized on the instance, with its tags)."""
    return Grant(
        actions=("ec2:GetConsoleOutput",),
        resources=arns.everywhere("instances"),
        reason=WHY_CONSOLES.format(tag=POOL_TAG, prefix=arns.prefix),
        conditions={"StringLike": {f"ec2:ResourceTag/{POOL_TAG}": f"{arns.prefix}-*"}},
    )


def fleet_reads(arns: Arns) -> list[Grant]:
    """What the diagnosis reads of a pool's fleet: its EC2 instances (and the console output of those that never
    registered), its cluster's container instances, quotas."""
    return [
        describe("Amazon EC2", "ec2:DescribeInstances", "ec2:DescribeTags"),
        Grant(actions=("ecs:ListContainerInstances",), resources=arns.everywhere("clusters"), reason=WHY_CLUSTERS),
        Grant(
            actions=("ecs:DescribeContainerInstances",),
            resources=arns.everywhere("container_instances"),
            reason=WHY_CLUSTERS,
        ),
        console_output(arns),
        GPU_QUOTAS,
    ]


WHY_TEAM_GPUS = (
    "Each team's GPU cap is an AWS Batch consumable resource the stack creates, named '{prefix}-team-<team>-gpus'; "
    "DescribeConsumableResource and ListJobsByConsumableResource are authorized on it (Service Authorization "
    "Reference for AWS Batch: resource type consumable-resource), so the grant is scoped to those names."
)
DOC_DEFINITION_RESOURCES = (
    "Service Authorization Reference for AWS Batch: RegisterJobDefinition is authorized against the job definition "
    "and each consumable resource its consumableResourceProperties name (resource type consumable-resource)."
)


def team_gpus(arns: Arns) -> Grant:
    """Reading a team's GPU cap as Batch counts it: held units, and the jobs waiting for it."""
    return Grant(
        actions=("batch:DescribeConsumableResource", "batch:ListJobsByConsumableResource"),
        resources=arns.everywhere("team_gpus"),
        reason=WHY_TEAM_GPUS.format(prefix=arns.prefix),
    )


def terminate_jobs(arns: Arns) -> Grant:
    return Grant(actions=("batch:TerminateJob",), resources=arns.everywhere("jobs"), reason=WHY_JOB_IDS)


@dataclass(frozen=True)
class Owned:
    """The stack's own resources the functions use, by ARN (tokens)."""

    table: str
    table_indexes: tuple[str, ...]
    instance_role: str
    job_role: str
    job_execution_role: str
    sweep_function: str
    # The capacity regions' instance roles, by name (each region's stack names its own: capacity_region.py).
    region_instance_roles: tuple[str, ...] = ()

    def items(self, *actions: str) -> Grant:
        """Item actions on the job table."""
        return Grant(actions=tuple(f"dynamodb:{action}" for action in actions), resources=(self.table,))

    def queries(self, *indexes: str) -> Grant:
        """Queries of the job table (records by partition: pools, hosts, offerings) and of the named indexes only
        (a query is authorized on the index it reads: table/<name>/index/<index>)."""
        named = tuple(arn for arn in self.table_indexes if any(arn.endswith(f"/index/{i}") for i in indexes))
        return Grant(actions=("dynamodb:Query",), resources=(self.table, *named))

    def active_index_scans(self) -> Grant:
        """Scans of the sparse index of unfinished jobs (and of its predecessor while DynamoDB fills it): the sweep
        reads its working set whole, never the table."""
        active = tuple(arn for arn in self.table_indexes if arn.rsplit("/", 1)[-1] in (GSI2_NAME, GSI2_LEGACY_NAME))
        return Grant(actions=("dynamodb:Scan",), resources=active)


def reservation_templates(arns: Arns) -> list[Grant]:
    """What a reservation's pool needs: the reservation as EC2 says now, and a launch template that targets it, copied
    from the stack's (its version's data) and tagged as GPU Pilot's, in whichever capacity region holds it."""
    return [
        describe("Amazon EC2", "ec2:DescribeCapacityReservations", "ec2:DescribeLaunchTemplateVersions"),
        Grant(
            actions=("ec2:CreateLaunchTemplate",),
            resources=arns.everywhere("launch_templates"),
            reason=WHY_RESERVATION_TEMPLATES.format(tag=RESERVATION_TAG),
            conditions={"StringLike": {f"aws:RequestTag/{RESERVATION_TAG}": "cr-*"}},
        ),
        Grant(
            actions=("ec2:CreateTags",),
            resources=arns.everywhere("launch_templates"),
            reason=WHY_RESERVATION_TEMPLATES.format(tag=RESERVATION_TAG),
            conditions={"StringEquals": {"ec2:CreateAction": "CreateLaunchTemplate"}},
            required_by=DOC_EC2_TAG_ON_CREATE,
        ),
    ]


def purchases(arns: Arns) -> list[Grant]:
    """Buying a Capacity Block (only in a deployment that allows it), tagged as GPU Pilot's purchase."""
    why = WHY_PURCHASE.format(tag=PURCHASED_BY_TAG)
    return [
        Grant(
            actions=("ec2:PurchaseCapacityBlock",),
            resources=arns.everywhere("capacity_reservations"),
            reason=why,
            conditions={"StringEquals": {f"aws:RequestTag/{PURCHASED_BY_TAG}": "gpupilot"}},
        ),
        Grant(
            actions=("ec2:CreateTags",),
            resources=arns.everywhere("capacity_reservations"),
            reason=why,
            conditions={"StringEquals": {"ec2:CreateAction": "PurchaseCapacityBlock"}},
            required_by=DOC_EC2_TAG_ON_CREATE,
        ),
    ]


def function_grants(
    arns: Arns,
    owned: Owned,
    allow_purchase: bool = False,
    capped_teams: bool = False,
    shares: tuple[str, ...] = (),
) -> dict[str, list[Grant]]:
    """Every Lambda's AWS permissions beyond its logs and X-Ray, keyed like constants.LAMBDAS; `allow_purchase`: the
    api may buy Capacity Blocks (the deployment sets a ceiling); `capped_teams`: some team has a GPU cap (a Batch
    consumable resource its jobs' definitions name, which the api, the submit and the diagnosis read); `shares`: the
    teams' share identifiers when they share pools by weight (pools are created with the fair-share policy, and a job
    is submitted only with one of them as its shareIdentifier).

    The state machine is named by its ARN, not by reference: the functions it invokes are also allowed to
    answer it, and a reference would make their policies, the functions and the state machine a cycle.
    The on-failure destinations' sqs:SendMessage is added by the functions construct (CDK's destination).
    """
    prefix_reason = WHY_PREFIX.format(prefix=arns.prefix)
    # Who builds or plans pools in a capacity region reads its network there (its stack's SSM parameter).
    networks = Grant(actions=("ssm:GetParameter",), resources=arns.region_parameters(REGION_PARAMETER))
    offerings = describe(
        "Amazon EC2", "ec2:DescribeInstanceTypes", "ec2:DescribeInstanceTypeOfferings", "ec2:DescribeSubnets"
    )
    # Ranking: spot prices and placement scores (spot requests), the GPU vCPU quotas (every request).
    market = [
        describe(
            "Amazon EC2", "ec2:DescribeSpotPriceHistory", "ec2:GetSpotPlacementScores", "ec2:DescribeAvailabilityZones"
        ),
        GPU_QUOTAS,
    ]
    # On-demand prices: the Price List API, cached in the table (an item per region, rewritten daily).
    price_list = describe("AWS Price List", "pricing:GetProducts")
    # Pricing an attempt that ended (events, the sweep's replays): its type's shape, its price.
    pricing = [
        describe("Amazon EC2", "ec2:DescribeInstanceTypes", "ec2:DescribeSpotPriceHistory"),
        price_list,
        # A spot attempt is priced in the zone it ran in: its container instance's.
        Grant(
            actions=("ecs:DescribeContainerInstances",),
            resources=arns.everywhere("container_instances"),
            reason=WHY_CLUSTERS,
        ),
    ]
    read_write = owned.items("GetItem", "UpdateItem")
    # The account's reservations: plans use them, the sweep charges their idle hours, GET /reservations lists them.
    reservations = describe("Amazon EC2", "ec2:DescribeCapacityReservations")
    # Retiring a pool, in Batch's order: disable and delete its queue, disable and delete its compute
    # environment (each authorized on the resource it names: GPU Pilot's own, under the prefix).
    retire_pools = [
        Grant(
            actions=("batch:UpdateJobQueue", "batch:DeleteJobQueue"),
            resources=arns.everywhere("job_queues"),
            reason=prefix_reason,
        ),
        Grant(
            actions=("batch:UpdateComputeEnvironment", "batch:DeleteComputeEnvironment"),
            resources=arns.everywhere("compute_environments"),
            reason=prefix_reason,
        ),
    ]
    grants = {
        "api": [
            networks,
            # Jobs, sweeps and Powertools idempotency records (deleted again when a submit fails).
            owned.items("GetItem", "PutItem", "UpdateItem", "DeleteItem"),
            # GET /jobs and GET /costs read the job list (its index) too.
            owned.queries(GSI1_NAME),
            offerings,
            market[0],
            price_list,
            # GET /jobs/{id}?explain=true diagnoses a waiting job now.
            describe("AWS Batch", "batch:DescribeJobs", "batch:DescribeComputeEnvironments"),
            *fleet_reads(arns),
            # DELETE /jobs/{id} terminates the job's live attempts.
            terminate_jobs(arns),
            Grant(actions=("states:StartExecution",), resources=(arns.state_machine(STATE_MACHINE_NAME),)),
            # DELETE /jobs/{id} stops the job's execution.
            Grant(
                actions=("states:StopExecution",),
                resources=(arns.executions(STATE_MACHINE_NAME),),
                reason=WHY_EXECUTIONS,
            ),
            Grant(
                actions=("states:DescribeExecution",),
                resources=(arns.executions(STATE_MACHINE_NAME),),
                reason=WHY_EXECUTIONS,
                required_by=DOC_DESCRIBE_ON_START,
            ),
            # GET /jobs/{id}/logs reads what the job's attempts printed.
            Grant(actions=("logs:GetLogEvents",), resources=arns.everywhere("job_log_streams"), reason=WHY_JOB_LOGS),
            # POST /sweep starts a sweep in the sweep function (asynchronously).
            Grant(actions=("lambda:InvokeFunction",), resources=(owned.sweep_function,)),
            # GET /reservations and the plan; GET /reservations/offerings.
            describe("Amazon EC2", "ec2:DescribeCapacityReservations", "ec2:DescribeCapacityBlockOfferings"),
            *(purchases(arns) if allow_purchase else []),
            # GET /teams: each team's GPUs in use; ?explain=true: a job held by its team's cap.
            *([team_gpus(arns)] if capped_teams else []),
        ],
        "select_gpu": [
            networks,
            owned.items("GetItem", "PutItem", "UpdateItem"),
            owned.queries(),
            offerings,
            *market,
            price_list,
            reservations,
        ],
        "ensure_queue": [
            networks,
            # The job's progress, an INVALID pool's attempt, the offering it leaves behind, the pool's claim;
            # making room reads every pool's item and forgets a retired one.
            owned.items("GetItem", "PutItem", "UpdateItem", "DeleteItem"),
            owned.queries(),
            # A pool retiring when a job needs it, or retired to make room under Batch's limits; whether its
            # queue still holds jobs before it is deleted.
            *retire_pools,
            describe("AWS Batch", "batch:ListJobs"),
            Grant(
                actions=("batch:CreateComputeEnvironment",),
                resources=arns.everywhere("compute_environments"),
                reason=prefix_reason,
            ),
            # CreateJobQueue is authorized against the queue and the compute environments it orders.
            Grant(
                actions=("batch:CreateJobQueue",),
                resources=(
                    *arns.everywhere("job_queues"),
                    *arns.everywhere("compute_environments"),
                    # A queue created with a scheduling policy is also authorized against the policy (Service
                    # Authorization Reference for AWS Batch: CreateJobQueue, resource type scheduling-policy).
                    *(arns.everywhere("fair_share") if shares else ()),
                ),
                reason=prefix_reason,
            ),
            Grant(
                actions=("batch:TagResource",),
                resources=(*arns.everywhere("compute_environments"), *arns.everywhere("job_queues")),
                reason=prefix_reason,
                required_by=DOC_TAG_ON_CREATE,
            ),
            describe("AWS Batch", "batch:DescribeComputeEnvironments", "batch:DescribeJobQueues"),
            # A job limited to zones gets a pool on those zones' subnets only; a pool is built on the launch
            # template's latest version (a new version is a new pool version).
            describe("Amazon EC2", "ec2:DescribeSubnets", "ec2:DescribeLaunchTemplates"),
            *reservation_templates(arns),
            Grant(
                actions=("iam:PassRole",),
                resources=(owned.instance_role, *(arns.role(name) for name in owned.region_instance_roles)),
                required_by=DOC_PASS_INSTANCE_ROLE,
            ),
            # The first compute environment of an account without Batch's service-linked role creates it.
            Grant(
                actions=("iam:CreateServiceLinkedRole",),
                resources=(arns.service_linked_role("batch.amazonaws.com", "AWSServiceRoleForBatch"),),
                conditions={"StringEquals": {"iam:AWSServiceName": "batch.amazonaws.com"}},
                required_by=DOC_SERVICE_LINKED_ROLE,
            ),
        ],
        "submit_job": [
            read_write,
            Grant(
                actions=("batch:RegisterJobDefinition",),
                resources=arns.everywhere("job_definitions"),
                reason=prefix_reason,
            ),
            Grant(
                actions=("batch:SubmitJob",),
                resources=(
                    *arns.everywhere("job_definitions"),
                    *arns.everywhere("job_queues"),
                    *arns.everywhere("jobs"),
                ),
                reason=f"{prefix_reason} {DOC_SUBMIT_JOB_RESOURCES}",
                # Pools that share by weight: a job only under a team's share (batch:ShareIdentifier, AWS Batch User
                # Guide, "Resource: Use the batch:ShareIdentifier condition key"), never one that weighs nothing.
                conditions={"StringEquals": {"batch:ShareIdentifier": list(shares)}} if shares else None,
            ),
            Grant(
                actions=("batch:TagResource",),
                resources=(*arns.everywhere("job_definitions"), *arns.everywhere("jobs")),
                reason=f"{prefix_reason} {WHY_JOB_IDS}",
                required_by=DOC_TAG_ON_CREATE,
            ),
            # The double-submit guard: a retried submit finds the Batch job its first try made, by name.
            describe("AWS Batch", "batch:ListJobs"),
            # A job cancelled while its submit ran: the submit terminates what it just submitted.
            terminate_jobs(arns),
            # A capped team's job definition names the team's consumable resource; a job its cap holds says so.
            *(
                [
                    Grant(
                        actions=("batch:RegisterJobDefinition",),
                        resources=arns.everywhere("team_gpus"),
                        reason=WHY_TEAM_GPUS.format(prefix=arns.prefix),
                        required_by=DOC_DEFINITION_RESOURCES,
                    ),
                    team_gpus(arns),
                ]
                if capped_teams
                else []
            ),
            Grant(
                actions=("iam:PassRole",),
                resources=(owned.job_role, owned.job_execution_role, arns.role(f"{arns.prefix}-job-*")),
                reason=WHY_JOB_ROLES.format(prefix=f"{arns.prefix}-job-"),
                required_by=DOC_PASS_JOB_ROLES,
            ),
        ],
        # Parks its token and clears spent ones: both are updates that return the record.
        "wait_for_job": [owned.items("UpdateItem"), RESUME_WAITS],
        "job_events": [
            owned.items("GetItem", "PutItem", "UpdateItem", "BatchGetItem"),
            RESUME_WAITS,
            # EC2's spot signals: the attempts on the instance are found in the sparse index of unfinished jobs.
            owned.active_index_scans(),
            # Batch's verdict on the job heading a queue holds the jobs behind it: they are listed and read back, and a
            # job joining the queue later asks whether its head still waits for that verdict.
            describe("AWS Batch", "batch:ListJobs", "batch:DescribeJobs"),
            *pricing,
            # The evidence against GPU hosts: each host-side failure kept, the host's failures read back; a host with
            # failures of enough different jobs gets a sweep at once (asynchronously), which quarantines it.
            owned.queries(),
            Grant(actions=("lambda:InvokeFunction",), resources=(owned.sweep_function,)),
            # A host agent's report of a job idle past its idle_policy `cancel` cancels it as DELETE /jobs/{id} does.
            terminate_jobs(arns),
            Grant(
                actions=("states:StopExecution",),
                resources=(arns.executions(STATE_MACHINE_NAME),),
                reason=WHY_EXECUTIONS,
            ),
        ],
        "diagnose": [
            RESUME_WAITS,
            owned.items("GetItem", "PutItem", "UpdateItem"),
            describe("AWS Batch", "batch:DescribeJobs", "batch:DescribeComputeEnvironments"),
            *fleet_reads(arns),
            # The catalog's vCPUs per type weigh the pool's instances against its maxvCpus.
            describe("Amazon EC2", "ec2:DescribeInstanceTypes"),
            terminate_jobs(arns),
            # A job its team's GPU cap holds is diagnosed so (TEAM_GPU_CAP), never fallen back.
            *([team_gpus(arns)] if capped_teams else []),
        ],
        "record_cost": [owned.items("GetItem", "PutItem", "UpdateItem"), *pricing],
        "record_failure": [read_write, terminate_jobs(arns)],
        "health_sweep": [
            RESUME_WAITS,
            # Reports, job records, offerings remembered as unavailable, pools' states (a retired one forgotten);
            # the records of many jobs read at once (BatchGetItem) and written in transactions (their updates are
            # authorized as UpdateItem each, their puts as PutItem).
            owned.items("GetItem", "PutItem", "UpdateItem", "DeleteItem", "BatchGetItem"),
            # The jobs that ran on a quarantined host (the job list); the unfinished jobs are scanned (their sparse
            # index, and its predecessor while DynamoDB backfills it).
            owned.queries(GSI1_NAME),
            owned.active_index_scans(),
            describe(
                "AWS Batch",
                "batch:DescribeJobs",
                "batch:ListJobs",
                "batch:DescribeComputeEnvironments",
                "batch:DescribeJobQueues",
            ),
            *fleet_reads(arns),
            # The catalog's vCPUs weigh fleets; replayed events price the attempts they end.
            *pricing,
            # The reservations' idle hours are waste (reservation_idle).
            reservations,
            # Remediation: jobs stuck past the hard limit, instances that never registered, dead agents.
            terminate_jobs(arns),
            Grant(
                actions=("ec2:TerminateInstances",),
                resources=arns.everywhere("instances"),
                reason=WHY_POOL_INSTANCES.format(tag=POOL_TAG, prefix=arns.prefix),
                conditions={"StringLike": {f"ec2:ResourceTag/{POOL_TAG}": f"{arns.prefix}-*"}},
            ),
            Grant(
                actions=("ecs:DeregisterContainerInstance",), resources=arns.everywhere("clusters"), reason=WHY_CLUSTERS
            ),
            # A bad GPU host is drained before it is terminated: UpdateContainerInstancesState is authorized on the
            # container instances it names (container-instance/<cluster>/<id>), those of GPU Pilot's clusters.
            Grant(
                actions=("ecs:UpdateContainerInstancesState",),
                resources=arns.everywhere("container_instances"),
                reason=WHY_CLUSTERS,
            ),
            # A pool whose instances keep failing to register: its queue is disabled (state only, so the
            # call names no compute environment and needs no grant on one). Pools outdated, idle or INVALID
            # are retired.
            *retire_pools,
            # A record whose Batch job vanished is failed, and its workflow stopped.
            Grant(
                actions=("states:StopExecution",),
                resources=(arns.executions(STATE_MACHINE_NAME),),
                reason=WHY_EXECUTIONS,
            ),
        ],
    }
    # A deployment without capacity regions has no region grants (a grant of nothing is none).
    return {key: [grant for grant in listed if grant.resources] for key, listed in grants.items()}
