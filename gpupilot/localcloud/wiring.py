"""How the deployed functions are wired into the local cloud: the world's stacks deployed, the functions told the
local timeline, each call authorized by its role and exposed to the world's faults, and what the dispatcher hands
back to the embedded AWS (metrics, failed invocations)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from typing import Any

from gpupilot.localcloud.deploy import ACCOUNT_ID, Deployment, deploy, deploy_region
from gpupilot.localcloud.dispatch import LocalFunction
from gpupilot.localcloud.faults import Faults
from gpupilot.localcloud.iam import IamEnforcer, enforcer_for
from gpupilot.localcloud.template import load_region_templates
from gpupilot.localcloud.timeline import timeline_overrides
from gpupilot.localcloud.world import World


def deploy_world(world: World) -> Deployment:
    """The home stack and each capacity region's stack, synthesized for the world's regions, deployed into moto."""
    import boto3

    home_template, region_templates = load_region_templates(
        world.region, list(world.regions), world.deployment_context()
    )
    session = boto3.session.Session()
    deployment = deploy(session, home_template, world.zones, world.region)
    deployment.regions = {
        region: deploy_region(session, template, world.regions[region].zones, region)
        for region, template in region_templates.items()
    }
    return deployment


def functions_on_timeline(deployment: Deployment, speedup: float, timings: str) -> dict[str, LocalFunction]:
    """The deployment's functions, their settings shortened to the local timeline (see timeline)."""
    return {
        key: dataclasses.replace(
            function, environment={**function.environment, **timeline_overrides(key, speedup, timings)}
        )
        for key, function in deployment.functions.items()
    }


def observe_calls_of(deployment: Deployment, faults: Faults, region: str, until: contextlib.ExitStack) -> None:
    """Until `until` closes: each function's calls authorized against its role in the template, as AWS would, and
    the world's faults (a call refused or throttled, answered before it is sent)."""
    from functions.shared.adapters.clients import observe_calls, stop_observing

    profile_roles = dict(deployment.instance_profile_roles)
    for regional in deployment.regions.values():
        profile_roles |= regional.instance_profile_roles
    enforcer = enforcer_for(
        deployment.policies, profile_roles, region, ACCOUNT_ID, IamEnforcer.log_dir_from_environment()
    )
    observe_calls(enforcer)
    until.callback(stop_observing, enforcer)
    for fault in (faults.refuse, faults.throttle):
        observe_calls(fault, event="before-send")
        until.callback(stop_observing, fault)


def put_metrics(aws_url: str, region: str, namespace: str, data: list[dict[str, Any]]) -> None:
    """A function's metrics (its embedded metric format) to the embedded CloudWatch, 20 to a call."""
    import boto3

    cloudwatch = boto3.client("cloudwatch", endpoint_url=aws_url, region_name=region)
    for start in range(0, len(data), 20):
        cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[start : start + 20])


def send_to_failure_queue(aws_url: str, region: str, function: LocalFunction, record: dict[str, Any]) -> None:
    """Lambda's on-failure destination: the invocation record, after the retries, to the function's queue."""
    if function.failure_queue_url is None:
        return
    import boto3

    message = {
        "version": "1.0",
        "requestContext": {
            "functionArn": function.arn,
            "condition": "RetriesExhausted",
            "approximateInvokeCount": 3,
        },
    } | record
    sqs = boto3.client("sqs", endpoint_url=aws_url, region_name=region)
    sqs.send_message(QueueUrl=function.failure_queue_url, MessageBody=json.dumps(message, default=str))
