"""Names shared by the stack, the handlers and the local cloud: one place, so they cannot drift."""

from __future__ import annotations

from dataclasses import dataclass

SERVICE_NAME = "gpupilot"
METRICS_NAMESPACE = "GpuPilot"
STACK_NAME = "GpuPilot"
# A capacity region's stack: GpuPilot-us-west-2.
REGION_STACK_PREFIX = f"{STACK_NAME}-"
# Where each capacity region's stack publishes its network (subnets, security group, instance profile, launch
# template) for the home region's functions, in its own region.
REGION_PARAMETER = "/gpupilot/capacity-region"
STATE_MACHINE_NAME = "GpuJob"
ASL_FILE = "statemachines/gpu_job.asl.json"
# Set on every function for the libraries, not read by our code. GPU Pilot uses no pydantic plugin, and without
# this pydantic scans every installed distribution's entry points when it builds its first model, at each cold
# start (pydantic/plugin/_loader.py; "Disabling Plugins" in pydantic's plugin documentation).
RUNTIME_ENVIRONMENT = {"PYDANTIC_DISABLE_PLUGINS": "__all__"}

# Environment variables read by functions/shared/adapters/config.py (all start with ENV_PREFIX).
ENV_PREFIX = "GPUPILOT_"
ENV_TABLE = "GPUPILOT_TABLE"
ENV_STATE_MACHINE_ARN = "GPUPILOT_STATE_MACHINE_ARN"
ENV_SUBNETS = "GPUPILOT_SUBNETS"
ENV_SECURITY_GROUPS = "GPUPILOT_SECURITY_GROUPS"
ENV_INSTANCE_PROFILE_ARN = "GPUPILOT_INSTANCE_PROFILE_ARN"
ENV_LAUNCH_TEMPLATE_NAME = "GPUPILOT_LAUNCH_TEMPLATE_NAME"
ENV_MAX_VCPUS = "GPUPILOT_MAX_VCPUS"
ENV_RESOURCE_PREFIX = "GPUPILOT_RESOURCE_PREFIX"
# Optional: without it Batch uses its service-linked role (the deployed default).
ENV_BATCH_SERVICE_ROLE_ARN = "GPUPILOT_BATCH_SERVICE_ROLE_ARN"
# Optional: Batch has no NVIDIA AMI for Graviton (g5g); with a custom one, arm64 GPU jobs can run.
ENV_ARM64_GPU_AMI_ID = "GPUPILOT_ARM64_GPU_AMI_ID"
# Jobs' own IAM: the default job role, the execution role that reads secrets, and what a request may name.
ENV_JOB_ROLE_ARN = "GPUPILOT_JOB_ROLE_ARN"
ENV_HOSTS_BUCKET = "GPUPILOT_HOSTS_BUCKET"
ENV_JOB_EXECUTION_ROLE_ARN = "GPUPILOT_JOB_EXECUTION_ROLE_ARN"
ENV_JOB_ROLE_PATTERN = "GPUPILOT_JOB_ROLE_PATTERN"
ENV_SECRET_ARN_PATTERNS = "GPUPILOT_SECRET_ARN_PATTERNS"
ENV_QUEUE_POLL_SECONDS = "GPUPILOT_QUEUE_POLL_SECONDS"
ENV_PROVISION_TIMEOUT_SECONDS = "GPUPILOT_PROVISION_TIMEOUT_SECONDS"
ENV_SWEEP_FUNCTION = "GPUPILOT_SWEEP_FUNCTION"
# Regions: the capacity regions besides home (every function), the regions a request runs in by default (the api and
# selection), and the SSM parameter each capacity region's stack writes its network to (those that build pools).
ENV_CAPACITY_REGIONS = "GPUPILOT_CAPACITY_REGIONS"
ENV_DEFAULT_REGIONS = "GPUPILOT_DEFAULT_REGIONS"
ENV_REGION_PARAMETER = "GPUPILOT_REGION_PARAMETER"
# How long the fleet may take (production defaults: minutes; the local cloud's timeline: seconds).
ENV_REGISTRATION_GRACE_SECONDS = "GPUPILOT_REGISTRATION_GRACE_SECONDS"
ENV_LAUNCH_GRACE_SECONDS = "GPUPILOT_LAUNCH_GRACE_SECONDS"
# The sweep's remediation (health_sweep): each can be switched off; the hard limit 0 never cancels.
ENV_TERMINATE_UNREGISTERED = "GPUPILOT_TERMINATE_UNREGISTERED"
ENV_DISABLE_POOL_AFTER_FAILURES = "GPUPILOT_DISABLE_POOL_AFTER_FAILURES"
ENV_IDLE_GRACE_SECONDS = "GPUPILOT_IDLE_GRACE_SECONDS"
ENV_DEREGISTER_DISCONNECTED = "GPUPILOT_DEREGISTER_DISCONNECTED"
ENV_CANCEL_STUCK_AFTER_MINUTES = "GPUPILOT_CANCEL_STUCK_AFTER_MINUTES"
ENV_POOL_IDLE_HOURS = "GPUPILOT_POOL_IDLE_HOURS"
ENV_POOL_CLAIM_GRACE_SECONDS = "GPUPILOT_POOL_CLAIM_GRACE_SECONDS"
# The api buys Capacity Blocks only in a deployment with a ceiling (context max_capacity_block_upfront_usd).
ENV_MAX_CAPACITY_BLOCK_UPFRONT_USD = "GPUPILOT_MAX_CAPACITY_BLOCK_UPFRONT_USD"
# The deployment's teams (context `teams`), as JSON: who may do what, budgets and GPU caps (the api reads it).
ENV_TEAMS = "GPUPILOT_TEAMS"
ENV_FAIR_SHARE_POLICY = "GPUPILOT_FAIR_SHARE_POLICY"
# Bad GPU hosts (job_events notes the evidence, health_sweep quarantines).
ENV_QUARANTINE_BAD_HOSTS = "GPUPILOT_QUARANTINE_BAD_HOSTS"
ENV_BAD_HOST_WINDOW_SECONDS = "GPUPILOT_BAD_HOST_WINDOW_SECONDS"
ENV_MAX_UNHEALTHY_SHARE = "GPUPILOT_MAX_UNHEALTHY_SHARE"

# DynamoDB single-table layout.
TABLE_PK = "pk"
TABLE_SK = "sk"
# Every job by creation time (the job list and /costs).
GSI1_NAME = "gsi1"
GSI1_PK = "gsi1pk"
GSI1_SK = "gsi1sk"
# A sparse index of unfinished jobs (the sweep's working set), projecting only what the sweep reads of a job.
GSI2_NAME = "active_v2"
GSI2_PK = "active_pk"
GSI2_SK = "active_sk"
GSI2_ATTRIBUTES = ("job_id", "attempts", "waits", "execution_arn", "stuck_after_minutes")
# The same keys, every attribute projected: what the sweep read before. CloudFormation cannot change an index's
# projection, and adds or deletes one index per update, so it stays for one release, read only while DynamoDB
# backfills GSI2_NAME after the deployment that adds it; the next release deletes it.
GSI2_LEGACY_NAME = "active"
# Both job indexes are sharded by job id over this many partitions, so no partition runs hot.
JOB_INDEX_SHARDS = 8
TTL_ATTRIBUTE = "expires_at"

# How long an Idempotency-Key returns the job it first made (its idempotency record's lifetime).
IDEMPOTENCY_WINDOW_SECONDS = 24 * 3600

# Batch events the workflow listens to.
BATCH_EVENT_SOURCE = "aws.batch"
BATCH_JOB_STATE_CHANGE = "Batch Job State Change"
BATCH_JOB_QUEUE_BLOCKED = "Batch Job Queue Blocked"
SWEEP_RATE_MINUTES = 5


@dataclass(frozen=True)
class LambdaSpec:
    """One Lambda of the control plane: where its handler is and how the ASL names it."""

    key: str
    handler: str
    description: str
    substitution: str | None = None  # ${Name} in the ASL, when the workflow calls it
    timeout_seconds: int = 30
    memory_mb: int = 512
    # Invoked asynchronously (EventBridge, or an Event invoke): failures go to an on-failure queue.
    invoked_async: bool = False


LAMBDAS: tuple[LambdaSpec, ...] = (
    # 28 s: API Gateway gives up on an integration at 29 s.
    LambdaSpec(
        "api",
        "functions.api.handler.handler",
        "HTTP API: submit, inspect, cancel, plan GPU jobs",
        timeout_seconds=28,
    ),
    LambdaSpec(
        "select_gpu",
        "functions.select_gpu.handler.handler",
        "Rank GPU instance types by real availability and price",
        "SelectGpuTypeFunctionArn",
    ),
    LambdaSpec(
        "ensure_queue",
        "functions.ensure_queue.handler.handler",
        "Create or reuse the pooled GPU compute environment and job queue",
        "EnsureJobQueueFunctionArn",
        timeout_seconds=60,
    ),
    LambdaSpec(
        "submit_job",
        "functions.submit_job.handler.handler",
        "Register the GPU job definition and submit the Batch job",
        "SubmitBatchJobFunctionArn",
    ),
    LambdaSpec(
        "wait_for_job",
        "functions.wait_for_job.handler.handler",
        "Park the workflow's task token until the Batch job starts or ends",
        "WaitForJobFunctionArn",
    ),
    LambdaSpec(
        "job_events",
        "functions.job_events.handler.handler",
        "Record Batch job state changes and resume the waiting workflow",
        invoked_async=True,
    ),
    LambdaSpec(
        "diagnose",
        "functions.diagnose.handler.handler",
        "Explain why a Batch job is stuck in RUNNABLE, with evidence",
        "DiagnoseStuckJobFunctionArn",
        timeout_seconds=60,
    ),
    LambdaSpec(
        "record_cost",
        "functions.record_cost.handler.handler",
        "Price the finished attempt and record the job's outcome",
        "RecordCostFunctionArn",
    ),
    LambdaSpec(
        "record_failure",
        "functions.record_failure.handler.handler",
        "Record why the workflow failed, on the job record",
        "RecordFailureFunctionArn",
    ),
    LambdaSpec(
        "health_sweep",
        "functions.health_sweep.handler.handler",
        "Sweep Batch and ECS for stuck jobs and unhealthy GPU fleets",
        timeout_seconds=120,
        invoked_async=True,
    ),
)

LAMBDAS_BY_KEY = {spec.key: spec for spec in LAMBDAS}


def function_name(prefix: str, key: str) -> str:
    """Physical name of a Lambda in the local cloud (the deployed stack lets CloudFormation name them)."""
    return f"{prefix}-{key.replace('_', '-')}"
