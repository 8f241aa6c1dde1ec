"""Batch's verdict on the job heading a queue holds every GPU Pilot job waiting behind it in that pool (one instance
type, one capacity type). AWS says it of the head alone (its statusReason, and a `Batch Job Queue Blocked` event), so
each job behind it is told too, and acts on it within seconds with its own next candidate instead of waiting out its
stuck_after: job_events when the event comes, the sweep for a verdict whose event was missed."""

from __future__ import annotations

from collections.abc import Mapping

from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.core.vocabulary import BatchStatus, JobStatus
from functions.shared.domain.diagnosis.verdicts import batch_verdict, queue_verdict
from functions.shared.domain.fleet.batch import BatchJobEvent, BatchJobState
from functions.shared.domain.jobs.lifecycle import parse_batch_job_name
from functions.shared.domain.jobs.records import ActiveJob, JobRecord
from functions.shared.ports import Ports
from functions.shared.usecases.jobs.track import resume


def queue_words(head: BatchJobState) -> str:
    """How a job's timeline says the verdict it waits under: Batch's words, and whose they are."""
    return f"{head.status_reason} (Batch's words for job {head.job_id}, which heads the queue this job waits in)"


def share_queue_verdict(
    head: BatchJobState,
    queued: list[BatchJobState],
    ports: Ports,
    records: Mapping[str, JobRecord | ActiveJob] | None = None,
) -> list[str]:
    """Note Batch's verdict on `head` on every GPU Pilot job of `queued` (RUNNABLE in its queue) that has no verdict
    of its own and has not been told yet, and resume its start wait; the jobs told. The records are read (one read per
    100 jobs) unless given."""
    if queue_verdict(head.status_reason) is None:
        return []
    behind: dict[str, tuple[int, BatchJobState]] = {}
    for job in queued:
        parsed = parse_batch_job_name(job.job_name)
        waiting = job.job_id != head.job_id and job.status == BatchStatus.RUNNABLE.value
        # Batch's own words for a job come first.
        if parsed and waiting and batch_verdict(job.status_reason) is None:
            behind[parsed[0]] = (parsed[1], job)
    if not behind:
        return []
    known = records if records is not None else ports.jobs.get_jobs(list(behind))
    told: list[str] = []
    for job_id, (number, job) in behind.items():
        record = known.get(job_id)
        attempt = record.attempts.get(number) if record is not None else None
        if attempt is None or attempt.batch_job_id != job.job_id or attempt.queue_verdict == head.status_reason:
            continue
        entry = record.entry_for(JobStatus.RUNNABLE, number) if isinstance(record, JobRecord) else None
        updated = ports.jobs.update_attempt(
            job_id,
            number,
            {"queue_verdict": head.status_reason, "queue_head": head.job_id},
            timeline_reason=(entry, queue_words(head), now_iso()) if entry is not None else None,
        )
        if updated is not None:
            resume(updated, ports)
            told.append(job_id)
    return told


def tell_queue(event: BatchJobEvent, ports: Ports) -> list[str]:
    """job_events: the jobs told Batch's verdict on the job heading their queue. On a queue-blocked event, the verdict
    is remembered on the pool (written first, so a job joining the queue meanwhile finds it) and told to every job
    waiting behind (ListJobs, 100 a page); a job that becomes RUNNABLE later is told on its own event (a read of the
    pool, and DescribeJobs of its head to see that it still waits for it). Calls are made in the queue's region: a
    capacity region's Batch events reach the home region's bus."""
    job = event.job
    if not job.job_queue or (not event.queue_blocked and job.status != BatchStatus.RUNNABLE.value):
        return []
    region = job.job_queue.split(":")[3] if job.job_queue.startswith("arn:") else None
    regional = ports.in_region(region) if region in ports.settings.regions else ports
    pool = job.job_queue.rsplit("/", 1)[-1]
    if event.queue_blocked:
        if queue_verdict(job.status_reason) is None:
            return []
        regional.pool_states.note_queue_verdict(pool, job.job_id, str(job.status_reason), event.at)
        return share_queue_verdict(job, regional.batch.list_jobs(job.job_queue, BatchStatus.RUNNABLE.value), ports)
    if parse_batch_job_name(job.job_name) is None or batch_verdict(job.status_reason) is not None:
        return []
    remembered = regional.pool_states.queue_verdict(pool)
    if remembered is None or remembered[0] == job.job_id:
        return []
    heads = regional.batch.describe_jobs([remembered[0]])
    if not heads or heads[0].status != BatchStatus.RUNNABLE.value or heads[0].status_reason != remembered[1]:
        return []  # the queue moved on since
    return share_queue_verdict(heads[0], [job], ports)
