"""Batch events reach job_events only from GPU Pilot's queues: the stack's rule, as the local deployment reads it
from the synthesized template, routed by the local cloud as EventBridge routes it."""

from __future__ import annotations

from typing import Any

from functions.shared.constants import BATCH_EVENT_SOURCE, BATCH_JOB_QUEUE_BLOCKED, BATCH_JOB_STATE_CHANGE
from gpupilot.localcloud.server import LocalCloud
from gpupilot.localcloud.world import World
from tests.integration.conftest import Cloud

OURS = "arn:aws:batch:us-east-1:123456789012:job-queue/gpupilot-od-x8664-g5-xlarge-1a2b3c4d"
FOREIGN = "arn:aws:batch:us-east-1:123456789012:job-queue/ml-team-training"


def routed(cloud: Cloud, *events: dict[str, Any]) -> list[tuple[str, str]]:
    """(function, job queue) of each delivery the local cloud makes for these events, in order."""
    local = LocalCloud(World())
    local.deployment = cloud.deployment
    delivered: list[tuple[str, str]] = []

    def record(key: str, event: dict[str, Any]) -> bool:
        delivered.append((key, event["detail"]["jobQueue"]))
        return True

    local.dispatcher.invoke_as_event = record  # type: ignore[method-assign]
    for event in events:
        local.deliver_event(event)
    return delivered


def batch_event(job_queue: str, detail_type: str = BATCH_JOB_STATE_CHANGE) -> dict[str, Any]:
    """A Batch job event as AWS sends it: both types carry the job's queue ARN in detail.jobQueue."""
    return {
        "version": "0", "id": "e", "detail-type": detail_type, "source": BATCH_EVENT_SOURCE,
        "account": "123456789012", "time": "2026-11-22T10:00:00Z", "region": "us-east-1",
        "resources": [f"arn:aws:batch:us-east-1:123456789012:job/{detail_type[:5]}", job_queue],
        "detail": {"jobName": "train", "jobId": "j-1", "jobQueue": job_queue, "status": "RUNNABLE"},
    }  # fmt: skip


def test_a_foreign_job_s_events_in_another_queue_never_reach_job_events_while_a_gpu_pilot_queue_s_do(
    cloud: Cloud,
) -> None:
    # Given the deployed stack's Batch event rule
    # When another team's job and a GPU Pilot job change state, and each one's queue is blocked
    delivered = routed(
        cloud,
        batch_event(FOREIGN),
        batch_event(OURS),
        batch_event(FOREIGN, BATCH_JOB_QUEUE_BLOCKED),
        batch_event(OURS, BATCH_JOB_QUEUE_BLOCKED),
    )
    # Then only the GPU Pilot queue's events reach job_events, both types of them
    assert delivered == [("job_events", OURS), ("job_events", OURS)]


def test_a_gpu_pilot_queue_in_another_region_or_partition_still_matches_and_a_lookalike_name_does_not(
    cloud: Cloud,
) -> None:
    # Given GPU Pilot's queues of a capacity region and of another partition, and queues whose names only
    # resemble GPU Pilot's
    elsewhere = [
        "arn:aws:batch:us-west-2:123456789012:job-queue/gpupilot-spot-x8664-g6-xlarge-0f0f0f0f-g2",
        "arn:aws-cn:batch:cn-north-1:123456789012:job-queue/gpupilot-od-x8664-g5-xlarge-1a2b3c4d",
    ]
    lookalikes = [
        "arn:aws:batch:us-east-1:123456789012:job-queue/team-gpupilot-od",
        "arn:aws:batch:us-east-1:123456789012:job-queue/gpupilotx-od",
        "arn:aws:batch:us-east-1:123456789012:compute-environment/gpupilot-od",
    ]
    # When their jobs change state / Then GPU Pilot's reach job_events wherever they are, the others never
    delivered = routed(cloud, *(batch_event(queue) for queue in lookalikes + elsewhere))
    assert delivered == [("job_events", queue) for queue in elsewhere]
