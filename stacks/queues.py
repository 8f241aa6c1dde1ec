"""The queues where what could not be delivered waits for an operator: encrypted, TLS only, kept 14 days."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from stacks.nag import Kind, acknowledge, acknowledge_checkov


def last_resort_queue(scope: Construct, construct_id: str, why_no_dead_letters: str) -> sqs.Queue:
    """A queue that is itself the end of the line (a dead-letter or failure destination): it has no dead-letter
    queue of its own, for the reason given (cdk-nag's and checkov's rules acknowledged with it)."""
    queue = sqs.Queue(
        scope,
        construct_id,
        encryption=sqs.QueueEncryption.SQS_MANAGED,
        enforce_ssl=True,
        retention_period=Duration.days(14),
    )
    for rule in ("AwsSolutions-SQS3", "Serverless-SQSRedrivePolicy"):
        acknowledge(queue, rule, why_no_dead_letters)
    acknowledge_checkov(queue, Kind.QUEUE)
    return queue
