"""The sweep's jobs: what Batch holds in GPU Pilot's queues, reconciled with the records of unfinished jobs.

Calls grow with pages and queues, not with jobs: one ListJobs page per 100 live jobs of each status in each
queue, and a DescribeJobs page per 100 records that the lists no longer show (finished, or vanished).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from functions.shared.domain.batch import BatchJobEvent, BatchJobState
from functions.shared.domain.health import missed_event
from functions.shared.domain.records import AttemptRecord, JobRecord
from functions.shared.domain.vocabulary import BatchStatus, JobStatus
from functions.shared.observability import logger
from functions.shared.ports import Ports
from functions.shared.usecases.host_evidence import note_host_faults
from functions.shared.usecases.track import record_batch_event, resume

LIVE_STATUSES = (BatchStatus.RUNNABLE, BatchStatus.STARTING, BatchStatus.RUNNING)
VANISHED = "its Batch job {batch_job_id} is gone: DescribeJobs no longer knows it (Batch keeps finished jobs ~7 days)"


@dataclass
class SweptJobs:
    """Batch's live jobs in our queues, which of them are GPU Pilot's, and what the sweep caught up on."""

    live: dict[str, BatchJobState] = field(default_factory=dict)
    owners: dict[str, JobRecord] = field(default_factory=dict)
    reconciled: int = 0
    vanished: list[str] = field(default_factory=list)


def list_live_jobs(queues: list[str], ports: Ports) -> dict[str, BatchJobState]:
    """Batch job id -> the job, for every RUNNABLE, STARTING or RUNNING job in the queues."""
    return {
        job.job_id: job for queue in queues for status in LIVE_STATUSES for job in ports.batch.list_jobs(queue, status)
    }


def sweep_jobs(queues: list[str], at: str, ports: Ports) -> SweptJobs:
    """List the queues' live jobs, then bring every unfinished record up to date with Batch."""
    swept = SweptJobs(live=list_live_jobs(queues, ports))
    latest: dict[str, tuple[JobRecord, AttemptRecord]] = {}
    for record in ports.jobs.active_jobs():
        found = record.latest_attempt()
        if found is not None and found[1].batch_job_id:
            latest[found[1].batch_job_id] = (record, found[1])
    unlisted = [batch_job_id for batch_job_id in latest if batch_job_id not in swept.live]
    described = {job.job_id: job for job in ports.batch.describe_jobs(unlisted)} if unlisted else {}
    for batch_job_id, (record, attempt) in latest.items():
        batch_job = swept.live.get(batch_job_id) or described.get(batch_job_id)
        try:
            if batch_job is None:
                swept.vanished.append(record.job_id)
                _fail_vanished(record, batch_job_id, ports)
                continue
            swept.owners[batch_job_id] = record
            swept.reconciled += _reconcile(record, attempt, batch_job, at, ports)
        except Exception:
            # One job's trouble must not stop the sweep of the others.
            logger.exception("could not reconcile job", extra={"job_id": record.job_id})
    return swept


def _reconcile(record: JobRecord, attempt: AttemptRecord, batch_job: BatchJobState, at: str, ports: Ports) -> int:
    """1 when the sweep caught up on something the events missed: a status, or a lost SendTaskSuccess."""
    if missed_event(attempt, batch_job):
        event = BatchJobEvent(at=at, job=batch_job)
        record_batch_event(event, ports)
        note_host_faults(event, ports)
        return 1
    return 1 if resume(record, ports) else 0


def _fail_vanished(record: JobRecord, batch_job_id: str, ports: Ports) -> None:
    """A record whose Batch job is gone can never finish: fail it with that reason and stop its workflow."""
    error = VANISHED.format(batch_job_id=batch_job_id)
    if (
        ports.jobs.finish(record.job_id, JobStatus.FAILED, fields={"error": error}, reason=error)
        and record.execution_arn
    ):
        ports.workflow.stop_execution(record.execution_arn, "BatchJobVanished", error)
