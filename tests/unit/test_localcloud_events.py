"""The local cloud delivers a Batch event to a function only when the stack's rule pattern matches it."""

from __future__ import annotations

from typing import Any

from gpupilot.localcloud.deploy import Deployment, EventRule
from gpupilot.localcloud.server import LocalCloud
from gpupilot.localcloud.world import World

HOME_BUS = "arn:aws:events:us-east-1:123456789012:event-bus/default"
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


def test_a_capacity_regions_batch_event_reaches_home_forwarded_keeping_its_region_with_a_new_id():
    from gpupilot.localcloud.deploy import RegionDeployment

    # Given home's rule for job_events, and us-west-2's stack forwarding Batch events to home's default bus
    cloud, delivered = cloud_with_rules(EventRule(name="r", pattern=PATTERN, targets=["job_events"]))
    assert cloud.deployment is not None
    cloud.deployment.regions = {
        "us-west-2": RegionDeployment(
            region="us-west-2", subnets=[], security_groups=[], instance_profile_arn="p", launch_template_name="lt",
            network_parameter="/n", event_rules=[EventRule(name="f", pattern=PATTERN, forward_to=[HOME_BUS])],
        )
    }  # fmt: skip
    # When Batch in us-west-2 emits a job's event
    source = event() | {"id": "1", "region": "us-west-2", "account": "123456789012", "resources": ["arn:job"]}
    cloud.deliver_event(source)
    # Then job_events gets it once, its region, account and resources the source's, its id new
    [(key, received)] = delivered
    assert key == "job_events"
    assert (received["region"], received["account"], received["resources"]) == (
        "us-west-2",
        "123456789012",
        ["arn:job"],
    )
    assert received["id"] != "1"


def test_a_capacity_regions_event_no_forwarding_rule_matches_never_reaches_home():
    from gpupilot.localcloud.deploy import RegionDeployment

    # Given us-west-2's forwarding rule matching Batch's events only
    cloud, delivered = cloud_with_rules(EventRule(name="r", pattern={"source": ["aws.ec2"]}, targets=["job_events"]))
    assert cloud.deployment is not None
    cloud.deployment.regions = {
        "us-west-2": RegionDeployment(
            region="us-west-2", subnets=[], security_groups=[], instance_profile_arn="p", launch_template_name="lt",
            network_parameter="/n", event_rules=[EventRule(name="f", pattern=PATTERN, forward_to=[HOME_BUS])],
        )
    }  # fmt: skip
    # When EC2 in us-west-2 emits an event / Then home sees nothing of it
    cloud.deliver_event(event(source="aws.ec2") | {"region": "us-west-2"})
    assert delivered == []
