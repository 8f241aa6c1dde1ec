"""Batch's retries of an attempt, kept as Batch's events bring them: where each ran and why it ended, so that the job
says why it ran again (its status does not move back for a retry, so nothing else would)."""

from __future__ import annotations

from functions.shared.domain.fleet.batch import BatchJobEvent
from functions.shared.domain.jobs.records import JobRecord
from functions.shared.domain.jobs.retries import BatchRetry, batch_retries
from functions.shared.ports import Ports


def note_batch_retries(event: BatchJobEvent, number: int, record: JobRecord, ports: Ports) -> list[BatchRetry]:
    """Keep the retries the event shows that attempt `number` does not hold yet, each naming the EC2 instance it ran
    on; returns the new ones. Batch names only the container instance: ECS's DescribeContainerInstances gives its
    EC2 instance ("ec2InstanceId", Amazon ECS API Reference, ContainerInstance), one call per new retry, which only a
    failure brings. A container instance ECS no longer describes leaves the host unnamed."""
    attempt = record.attempts.get(number)
    found = batch_retries(event.job)
    if attempt is None or len(found) <= len(attempt.batch_retries):
        return []
    fleet = ports.in_region(attempt.region).fleet
    new = []
    for retry in found[len(attempt.batch_retries) :]:
        host = retry.host
        if host is None and retry.container_instance_arn:
            described = fleet.container_instance(retry.container_instance_arn)
            host = described.ec2_instance_id if described is not None and described.ec2_instance_id else None
        new.append(retry.model_copy(update={"host": host}))
    noted = ports.jobs.note_retries(record.job_id, number, [*attempt.batch_retries, *new])
    return new if noted else []
