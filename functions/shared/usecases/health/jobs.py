"""The sweep's jobs: what Batch holds in GPU Pilot's queues, reconciled with the records of unfinished jobs.

Calls grow with pages and queues, not with jobs: one ListJobs page per 100 live jobs of each status in each
queue, a page of the index of unfinished jobs per shard (and per 1 MB of what it projects), a DescribeJobs page per
100 records that the lists no longer show (finished, or vanished), and for the records whose events were missed a
few writes and a read per 100 of them, however many there are (the workflows they resume: one call each).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from functions.shared.domain.core.vocabulary import BatchStatus, JobStatus
from functions.shared.domain.diagnosis.verdicts import queue_verdict
from functions.shared.domain.fleet.batch import BatchJobEvent, BatchJobState
from functions.shared.domain.health.sweep import missed_event
from functions.shared.domain.jobs.records import ActiveJob, AttemptRecord
from functions.shared.domain.jobs.writes import JobFinish
from functions.shared.observability import logger
from functions.shared.ports import Ports
from functions.shared.usecases.health.replay import replay_batch_events
from functions.shared.usecases.hosts.evidence import note_host_faults
from functions.shared.usecases.jobs.queue_verdicts import share_queue_verdict
from functions.shared.usecases.jobs.track import resume
from functions.shared.usecases.teams.budgets import settle
from functions.shared.usecases.teams.callers import has_teams

LIVE_STATUSES = (BatchStatus.RUNNABLE, BatchStatus.STARTING, BatchStatus.RUNNING)
VANISHED = "its Batch job {batch_job_id} is gone: DescribeJobs no longer knows it (Batch keeps finished jobs ~7 days)"


@dataclass
class SweptJobs:
    """Batch's live jobs in our queues, which of them are GPU Pilot's, and what the sweep caught up on."""

    live: dict[str, BatchJobState] = field(default_factory=dict)
    owners: dict[str, ActiveJob] = field(default_factory=dict)
    reconciled: int = 0
    vanished: list[str] = field(default_factory=list)


def list_live_jobs(queues: list[str], ports: Ports) -> dict[str, BatchJobState]:
    """Batch job id -> the job, for every RUNNABLE, STARTING or RUNNING job in the queues."""
    return {
        job.job_id: job for queue in queues for status in LIVE_STATUSES for job in ports.batch.list_jobs(queue, status)
    }


def sweep_jobs(queues: list[str], at: str, ports: Ports, records: list[ActiveJob] | None = None) -> SweptJobs:
    """List the queues' live jobs, then bring every unfinished record (of `records`, else all) whose latest attempt
    is in this region up to date with Batch.

    A record the listing shows as its attempt recorded it costs no call. The others cost calls by the hundred:
    the records' missed events are replayed together (replay.replay_batch_events), with the vanished jobs' ends."""
    swept = SweptJobs(live=list_live_jobs(queues, ports))
    latest: dict[str, tuple[ActiveJob, AttemptRecord]] = {}
    for job in ports.jobs.active_jobs() if records is None else records:
        found = job.latest_attempt()
        if found is None or not found[1].batch_job_id:
            continue
        if (found[1].region or ports.settings.home) == ports.settings.region:
            latest[found[1].batch_job_id] = (job, found[1])
    _read_stuck_after(latest, ports)
    unlisted = [batch_job_id for batch_job_id in latest if batch_job_id not in swept.live]
    described = {job.job_id: job for job in ports.batch.describe_jobs(unlisted)} if unlisted else {}
    missed: list[BatchJobEvent] = []
    vanished: list[tuple[ActiveJob, str]] = []
    for batch_job_id, (job, attempt) in latest.items():
        batch_job = swept.live.get(batch_job_id) or described.get(batch_job_id)
        if batch_job is None:
            vanished.append((job, batch_job_id))
            continue
        swept.owners[batch_job_id] = job
        if missed_event(attempt, batch_job):
            missed.append(BatchJobEvent(at=at, job=batch_job))
            continue
        try:
            # A lost SendTaskSuccess: the record knows, its workflow was never told.
            swept.reconciled += 1 if resume(job, ports) else 0
        except Exception:
            # One job's trouble must not stop the sweep of the others.
            logger.exception("could not reconcile job", extra={"job_id": job.job_id})
    # A record whose Batch job is gone can never finish: it is failed with that reason, its workflow stopped.
    errors = [VANISHED.format(batch_job_id=batch_job_id) for _, batch_job_id in vanished]
    ends = [
        JobFinish(job.job_id, JobStatus.FAILED, {"error": error}, error)
        for (job, _), error in zip(vanished, errors, strict=True)
    ]
    replayed, failed = replay_batch_events(missed, ports, along=ends) if missed or ends else (0, [])
    swept.reconciled += replayed
    for event in missed:
        try:
            # What the events would have told of the hosts: a failure its host caused counts against it (this
            # sweep judges the hosts next, with it).
            note_host_faults(event, ports, sweeping=True)
        except Exception:
            logger.exception("could not note the job's host faults", extra={"batch_job_id": event.job.job_id})
    _share_queue_verdicts(swept, {job.job_id: job for job, _ in latest.values()}, ports)
    for (job, _), error, recorded in zip(vanished, errors, failed, strict=True):
        swept.vanished.append(job.job_id)
        if recorded and has_teams(ports):
            settle(job.job_id, ports)  # what it held of its team's budget goes back
        if recorded and job.execution_arn:
            try:
                ports.workflow.stop_execution(job.execution_arn, "BatchJobVanished", error)
            except Exception:
                logger.exception("could not stop the workflow", extra={"job_id": job.job_id})
    return swept


def _read_stuck_after(latest: dict[str, tuple[ActiveJob, AttemptRecord]], ports: Ports) -> None:
    """Records written before the index projected stuck_after_minutes: their requests say it (a read per 100)."""
    unknown = {job.job_id: job for job, _ in latest.values() if job.stuck_after_minutes is None}
    for job_id, record in ports.jobs.get_jobs(list(unknown)).items() if unknown else ():
        unknown[job_id].stuck_after_minutes = record.request.stuck_after_minutes


def _share_queue_verdicts(swept: SweptJobs, records: dict[str, ActiveJob], ports: Ports) -> None:
    """A verdict on the job heading a queue whose event was missed: the jobs waiting behind it are told now (no call
    for a queue whose jobs were told already)."""
    queued: dict[str, list[BatchJobState]] = {}
    for job in swept.live.values():
        if job.status == BatchStatus.RUNNABLE.value:
            queued.setdefault(job.job_queue, []).append(job)
    for jobs in queued.values():
        for head in (job for job in jobs if queue_verdict(job.status_reason)):
            try:
                swept.reconciled += len(share_queue_verdict(head, jobs, ports, records))
            except Exception:
                logger.exception("could not share a queue's verdict", extra={"batch_job_id": head.job_id})
