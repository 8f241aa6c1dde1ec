"""A capacity region's stack: what a pool needs there, and the forwarding of its Batch events home.

The control plane (API, workflow, table, sweeps) stays in the home region; each other capacity region gets this
small stack of its own: a VPC and subnets in the chosen zones, a security group, the GPU launch template, an
instance role and profile, an SSM parameter naming them for the home region's functions, and an EventBridge rule
that forwards the region's Batch job events to the home region's default event bus (a cross-region bus target,
with the role CDK makes for it: events:PutEvents on that bus alone).

Nothing is referenced across stacks: the home bus's ARN is built from the home region's name, and the home
stack's functions read the network from the parameter in this region, so each stack deploys on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Aws, Environment, Fn, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from functions.shared.constants import REGION_PARAMETER
from stacks.batch_fleet import BatchFleet, fair_share, team_gpus
from stacks.events import batch_events_pattern, spot_signals_pattern
from stacks.queues import last_resort_queue
from stacks.settings import LAUNCH_TEMPLATE_NAME, RESOURCE_PREFIX, DeploySettings


def instance_role_name(region: str) -> str:
    """The GPU instances' role in a capacity region: named, so the home stack can let its functions pass it."""
    return f"{RESOURCE_PREFIX}-gpu-instance-{region}"


def home_event_bus_arn(home_region: str) -> str:
    """The home region's default event bus, in this account: built from names, no cross-region reference."""
    return f"arn:{Aws.PARTITION}:events:{home_region}:{Aws.ACCOUNT_ID}:event-bus/default"


class CapacityRegionStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: DeploySettings,
        region: str,
        zones: Sequence[str],
        **kwargs: Any,
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            env=Environment(account=settings.account, region=region),
            description=f"GPU Pilot capacity region {region}: network, GPU launch template and instance role for "
            f"pools, Batch events forwarded to the home region {settings.region}",
            **kwargs,
        )
        fleet = BatchFleet(
            self,
            "BatchFleet",
            zones=zones,
            secret_arns=(),
            secrets_prefix=settings.job_secrets_prefix,
            job_roles=False,
            instance_role_name=instance_role_name(region),
            gpu_boot_check=settings.gpu_boot_check,
            home_region=settings.region,
        )
        # The network as the home region's functions read it (functions/shared/adapters/regions.py).
        network = Fn.join(
            "",
            [
                '{"subnets": ["',
                Fn.join('", "', fleet.private_subnet_ids),
                '"], "security_groups": ["',
                fleet.security_group.security_group_id,
                '"], "instance_profile_arn": "',
                fleet.instance_profile.attr_arn,
                f'", "launch_template_name": "{LAUNCH_TEMPLATE_NAME}"}}',
            ],
        )
        self.network_parameter = ssm.StringParameter(
            self,
            "Network",
            parameter_name=REGION_PARAMETER,
            string_value=network,
            description="GPU Pilot: this capacity region's subnets, security group, instance profile and launch "
            "template, read by the home region's functions",
        )
        self.forwarding = ForwardBatchEvents(self, "Events", home_region=settings.region)
        # Batch counts a consumable resource per region: each capped team holds max_gpus in each region.
        team_gpus(self, settings.capped_teams)
        fair_share(self, settings.teams)


class ForwardBatchEvents(Construct):
    """The region's Batch events of GPU Pilot's queues, forwarded to the home region's default bus, where the home
    stack's rule hands them to job_events (EventBridge does not route an event it received from another bus to a
    third one, so the home rule targets the function directly)."""

    def __init__(self, scope: Construct, construct_id: str, *, home_region: str) -> None:
        super().__init__(scope, construct_id)
        self.dead_letters = last_resort_queue(
            self,
            "ForwardingDeadLetters",
            "This queue is itself the dead-letter queue of the forwarding rule's target; a DLQ for a DLQ would "
            "only move the same undeliverable events again.",
        )
        home_bus = events.EventBus.from_event_bus_arn(self, "HomeBus", home_event_bus_arn(home_region))
        self.rule = events.Rule(
            self,
            "ForwardBatchJobEvents",
            description=f"Batch job state changes and blocked queues of GPU Pilot's queues -> {home_region}",
            event_pattern=batch_events_pattern(),
        )
        # CDK gives the target a role of its own that EventBridge assumes: events:PutEvents on the home bus only.
        # (An event bus target takes no retry policy; the dead-letter queue keeps what cannot be delivered, and the
        # home region's sweep reconciles the jobs meanwhile.)
        self.rule.add_target(targets.EventBus(home_bus, dead_letter_queue=self.dead_letters))
        # EC2's spot signals for the region's instances: the attempts on them are recorded in the home region.
        self.spot_rule = events.Rule(
            self,
            "ForwardSpotSignals",
            description=f"EC2 spot interruption warnings and rebalance recommendations -> {home_region}",
            event_pattern=spot_signals_pattern(),
        )
        self.spot_rule.add_target(targets.EventBus(home_bus, dead_letter_queue=self.dead_letters))
