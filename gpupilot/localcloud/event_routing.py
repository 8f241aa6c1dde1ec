"""EventBridge in the local cloud: an event delivered to the targets of every rule of its region's default bus whose
pattern matches it, a capacity region's matches forwarded to the home region's bus."""

from __future__ import annotations

import json
from typing import Any

from gpupilot.localcloud.deploy import ACCOUNT_ID, Deployment
from gpupilot.localcloud.dispatch import HandlerDispatcher


def _matches(pattern: dict[str, Any] | None, event: dict[str, Any]) -> bool:
    from moto.events.models import EventPattern

    return pattern is not None and EventPattern.load(json.dumps(pattern)).matches_event(event)  # type: ignore[arg-type]


def forwarded(event: dict[str, Any]) -> dict[str, Any]:
    """An event as EventBridge delivers it on another region's bus: the source's `region`, `account` and `resources`
    kept, a new `id` (moto's own forwarding rewrites all three to the destination's; LocalStack's tests, validated
    against AWS, found the source's region and account kept and a new id across regions: AWS's documentation does
    not say, so GPU Pilot reads an attempt's region from its record, never from the event's envelope)."""
    import uuid

    return {**event, "id": str(uuid.uuid4())}


def deliver_event(
    deployment: Deployment, dispatcher: HandlerDispatcher, home_region: str, event: dict[str, Any]
) -> None:
    """Deliver `event` to the targets of every rule of its region's default bus whose pattern matches it, as
    asynchronous invocations. A capacity region's rules forward what they match to the home region's bus (its
    stack's cross-region bus target), where the home rules match it again: the event keeps its source region,
    account and resources, and gets a new id (see `forwarded`)."""
    regional = deployment.regions.get(str(event.get("region")))
    if regional is None:
        deliver_event_home(deployment, dispatcher, event)
        return
    home_bus = f":events:{home_region}:{ACCOUNT_ID}:event-bus/default"
    for rule in regional.event_rules:
        if _matches(rule.pattern, event) and any(bus.endswith(home_bus) for bus in rule.forward_to):
            deliver_event_home(deployment, dispatcher, forwarded(event))


def deliver_event_home(deployment: Deployment, dispatcher: HandlerDispatcher, event: dict[str, Any]) -> None:
    """An event on the home region's bus (its own, or one forwarded from another region's)."""
    for rule in deployment.event_rules:
        if _matches(rule.pattern, event):
            for key in rule.targets:
                dispatcher.invoke_as_event(key, event)
