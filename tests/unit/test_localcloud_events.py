"""The local cloud delivers a Batch event to a function only when the stack's rule pattern matches it."""

from __future__ import annotations

from typing import Any

from gpupilot.localcloud.deploy import Deployment, EventRule
from gpupilot.localcloud.server import LocalCloud
from gpupilot.localcloud.world import World

PATTERN = {"source": ["aws.batch"], "detail-type": ["Batch Job State Change", "Batch Job Queue Blocked"]}


def cloud_with_rules(*rules: EventRule) -> tuple[LocalCloud, list[tuple[str, Any]]]:
    cloud = LocalCloud(World())
    cloud.deployment = Deployment(
        table_name="t", state_machine_arn="arn", functions={}, subnets=[], security_groups=[],
        instance_profile_arn="p", launch_template_name="lt", alarm_topic_arn="a", alarms=[], event_rules=list(rules),
    )  # fmt: skip
    delivered: list[tuple[str, Any]] = []
    cloud.dispatcher.invoke_as_event = lambda key, event: delivered.append((key, event)) or True  # type: ignore[method-assign]
    return cloud, delivered


def event(source: str = "aws.batch", detail_type: str = "Batch Job State Change") -> dict[str, Any]:
    return {"source": source, "detail-type": detail_type, "detail": {"jobName": "x", "status": "RUNNING"}}


def test_a_batch_state_change_reaches_the_rules_target():
    cloud, delivered = cloud_with_rules(EventRule(name="r", pattern=PATTERN, targets=["job_events"]))
    cloud.deliver_event(event())
    assert [key for key, _ in delivered] == ["job_events"]


def test_an_event_the_pattern_does_not_match_reaches_nothing():
    # Given the stack's rule / When an event of another source or type comes / Then nothing is invoked
    cloud, delivered = cloud_with_rules(EventRule(name="r", pattern=PATTERN, targets=["job_events"]))
    cloud.deliver_event(event(source="aws.ecs"))
    cloud.deliver_event(event(detail_type="Batch Job Definition Change"))
    assert delivered == []


def test_schedules_are_not_pattern_rules():
    cloud, delivered = cloud_with_rules(EventRule(name="s", schedule="rate(5 minutes)", targets=["health_sweep"]))
    cloud.deliver_event(event())
    assert delivered == []
