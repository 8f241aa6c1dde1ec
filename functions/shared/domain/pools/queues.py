"""A pool's job queue: its `CreateJobQueue` arguments, with Batch's own backstop for jobs it cannot start. Pure."""

from __future__ import annotations

from typing import Any

from functions.shared.domain.pools.specs import POOL_TAG, Pool

# jobStateTimeLimitActions: the reasons Batch supports, and its longest limit (600 to 86400 s): a day.
RUNNABLE_LIMIT_REASONS = (
    "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
    "MISCONFIGURATION:COMPUTE_ENVIRONMENT_MAX_RESOURCE",
    "MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT",
)
RUNNABLE_LIMIT_SECONDS = 86400


def scheduling_policy_arn(compute_environment_arn: str, name: str) -> str:
    """The policy's ARN in the region and account of a pool's compute environment (both are Batch's ARNs:
    arn:partition:batch:region:account:compute-environment/name -> scheduling-policy/name)."""
    return f"{compute_environment_arn.split(':compute-environment/', 1)[0]}:scheduling-policy/{name}"


def job_queue_spec(pool: Pool, compute_environment_arn: str, fair_share_policy: str = "") -> dict[str, Any]:
    """`CreateJobQueue` arguments: one queue per pool, ordering only the pool's compute environment; with the
    deployment's fair-share policy when its teams share pools by weight (a queue without one is FIFO, and "can't have
    a fair-share scheduling policy added", AWS Batch API Reference, "CreateJobQueue", schedulingPolicyArn)."""
    # The deployment's policy (its name, fair_share_policy) in the pool's region and account.
    arn = scheduling_policy_arn(compute_environment_arn, fair_share_policy) if fair_share_policy else None
    policy = {"schedulingPolicyArn": arn} if arn else {}
    return policy | {
        "jobQueueName": pool.name,
        "state": "ENABLED",
        "priority": 1,
        "computeEnvironmentOrder": [{"order": 1, "computeEnvironment": compute_environment_arn}],
        # Batch's own backstop for the causes it names, should the workflow and the sweep both be gone.
        "jobStateTimeLimitActions": [
            {"reason": reason, "state": "RUNNABLE", "maxTimeSeconds": RUNNABLE_LIMIT_SECONDS, "action": "CANCEL"}
            for reason in RUNNABLE_LIMIT_REASONS
        ],
        "tags": {POOL_TAG: pool.name},
    }
