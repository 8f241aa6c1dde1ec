"""EventBridge: Batch job events drive the workflow; a schedule runs the health sweep."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from functions.shared.constants import (
    BATCH_EVENT_SOURCE,
    BATCH_JOB_QUEUE_BLOCKED,
    BATCH_JOB_STATE_CHANGE,
    SWEEP_RATE_MINUTES,
)
from functions.shared.domain.jobs.agent_reports import DETAIL_TYPE as AGENT_DETAIL_TYPE
from functions.shared.domain.jobs.agent_reports import SOURCE as AGENT_SOURCE
from functions.shared.domain.jobs.ec2_events import EC2_SOURCE, Ec2Signal
from stacks.nag import acknowledge
from stacks.queues import last_resort_queue
from stacks.settings import RESOURCE_PREFIX

# The job queues GPU Pilot creates, in any partition, region and account: both events name the job's queue by
# its ARN in `detail.jobQueue`. A wildcard, not a prefix joined from the stack's tokens, because the ARN of a
# queue in another region (capacity regions forward their Batch events to the home bus) or partition must
# match too, and a plain string keeps the synthesized pattern the one the local cloud matches events against.
GPU_PILOT_QUEUES = f"arn:*:batch:*:*:job-queue/{RESOURCE_PREFIX}-*"


def batch_events_pattern() -> events.EventPattern:
    """Batch job state changes and blocked queues of GPU Pilot's queues only: other teams' jobs in the account would
    otherwise invoke job_events for nothing (a foreign job submitted into a GPU Pilot queue still matches, as the
    sweep covers it). The home region's rule and each capacity region's forwarding rule match the same."""
    return events.EventPattern(
        source=[BATCH_EVENT_SOURCE],
        detail_type=[BATCH_JOB_STATE_CHANGE, BATCH_JOB_QUEUE_BLOCKED],
        detail={"jobQueue": events.Match.wildcard(GPU_PILOT_QUEUES)},
    )


def spot_signals_pattern() -> events.EventPattern:
    """EC2's interruption warning and rebalance recommendation for spot instances (Amazon EC2 User Guide, "Spot
    Instance interruption notices" and "EC2 instance rebalance recommendations"). The events carry no tags, so
    every spot instance of the account in the region matches: job_events ignores those no GPU Pilot attempt runs
    on. The home region's rule and each capacity region's forwarding rule match the same."""
    return events.EventPattern(source=[EC2_SOURCE], detail_type=[signal.value for signal in Ec2Signal])


class JobEvents(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        job_events: lambda_.IFunction,
        health_sweep: lambda_.IFunction,
    ) -> None:
        super().__init__(scope, construct_id)
        # An event that cannot be delivered is kept for replay rather than lost; the sweep reconciles
        # the job meanwhile, so nothing waits on this queue.
        self.dead_letters = last_resort_queue(
            self,
            "BatchEventsDeadLetters",
            "This queue is itself the dead-letter queue of the Batch events rule target; a DLQ for a DLQ "
            "would only move the same undeliverable events again.",
        )

        def to_job_events(rule_id: str, description: str, pattern: events.EventPattern) -> events.Rule:
            """A rule whose events job_events takes, kept on the dead-letter queue when they cannot be delivered."""
            rule = events.Rule(self, rule_id, description=description, event_pattern=pattern)
            rule.add_target(
                targets.LambdaFunction(
                    job_events,
                    dead_letter_queue=self.dead_letters,
                    retry_attempts=8,
                    # A task token waits far longer than this, and the sweep catches what falls out.
                    max_event_age=Duration.hours(6),
                )
            )
            return rule

        # The capacity regions' events arrive on the same bus, forwarded by their stacks' rules.
        self.batch_rule = to_job_events(
            "BatchJobEvents",
            "Batch job state changes and blocked queues of GPU Pilot's queues -> job_events",
            batch_events_pattern(),
        )
        # The host agents' reports of attempts (host_agent/report.py), sent by every region's hosts to the home bus.
        self.agent_rule = to_job_events(
            "HostAgentReports",
            "GPU Pilot host agents' reports of attempts -> job_events",
            events.EventPattern(source=[AGENT_SOURCE], detail_type=[AGENT_DETAIL_TYPE]),
        )
        # EC2's own word on a spot host, recorded on the attempts running on it (jobs/ec2_events.py).
        self.spot_rule = to_job_events(
            "SpotInstanceSignals",
            "EC2 spot interruption warnings and rebalance recommendations -> job_events",
            spot_signals_pattern(),
        )

        self.sweep_schedule = events.Rule(
            self,
            "HealthSweepSchedule",
            description="Periodic health sweep: stuck jobs, unregistered instances, invalid pools",
            schedule=events.Schedule.rate(Duration.minutes(SWEEP_RATE_MINUTES)),
        )
        self.sweep_schedule.add_target(
            targets.LambdaFunction(
                health_sweep,
                # A sweep that missed its slot is replaced by the next tick, not retried into it.
                retry_attempts=1,
                max_event_age=Duration.minutes(SWEEP_RATE_MINUTES - 1),
            )
        )
        acknowledge(
            self.sweep_schedule,
            "Serverless-EventBusDLQ",
            "A scheduled sweep that EventBridge could not deliver is replaced by the next one, minutes later (it "
            "carries no data: each sweep reads the whole fleet afresh); a dead-letter queue would hold empty "
            "schedule ticks nobody replays. Sweeps that fail in Lambda go to its on-failure queue, alarmed.",
        )
