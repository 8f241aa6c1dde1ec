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


def job_queue_spec(pool: Pool, compute_environment_arn: str) -> dict[str, Any]:
    """`CreateJobQueue` arguments: one queue per pool, ordering only the pool's compute environment."""
    return {
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
