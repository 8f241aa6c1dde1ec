"""GET /jobs, GET /jobs/{id} and DELETE /jobs/{id}."""

from __future__ import annotations

from functions.shared.domain.core.clock import now_iso
from functions.shared.domain.core.errors import JobAlreadyFinished, JobNotFound
from functions.shared.domain.core.vocabulary import JobStatus
from functions.shared.domain.diagnosis.runnable import as_queued, behind, diagnose
from functions.shared.domain.jobs.current import current_attempt, shown_status
from functions.shared.domain.jobs.next_action import next_action, with_next_action
from functions.shared.domain.jobs.records import JobRecord
from functions.shared.domain.jobs.views import JobList, JobView, job_view
from functions.shared.domain.teams.identity import Caller
from functions.shared.ports import Ports
from functions.shared.usecases.jobs.attempt import CANCELLED_REASON
from functions.shared.usecases.jobs.outcome import terminate_live_attempts
from functions.shared.usecases.reservations.wait import waiting_diagnosis
from functions.shared.usecases.teams.budgets import settle
from functions.shared.usecases.teams.caps import cap_wait


def owned_job(job_id: str, ports: Ports, caller: Caller | None) -> JobRecord:
    """The job's record, if the caller may see it: another team's job is not found (its existence does not leak)."""
    record = ports.jobs.get_job(job_id)
    if caller is not None and not caller.sees(record.team):
        raise JobNotFound(job_id)
    return record


def get_job(job_id: str, ports: Ports, caller: Caller | None = None) -> JobView:
    return job_view(owned_job(job_id, ports, caller))


def explain_job(job_id: str, ports: Ports, caller: Caller | None = None) -> JobView:
    """GET /jobs/{id}?explain=true: the job, with a diagnosis of its wait made now (no remedy is taken)."""
    record = owned_job(job_id, ports, caller)
    view = job_view(record)
    waiting = record.waiting_for_reservation()
    if waiting is not None:
        return view.model_copy(update={"explanation": waiting_diagnosis(waiting, record.request.reservation_fallback)})
    attempt = current_attempt(record)
    if view.status.finished or attempt is None:
        return view
    if not attempt.batch_job_id:
        return view.model_copy(update={"explanation": attempt.diagnosis})
    regional = ports.in_region(attempt.region)
    described = regional.batch.describe_jobs([attempt.batch_job_id])
    if not described or described[0].status not in ("SUBMITTED", "PENDING", "RUNNABLE"):
        return view
    # Imported here: only ?explain=true reads a pool's fleet, and an api cold start that serves a read need not.
    from functions.shared.usecases.fleet.evidence import pool_evidence

    job, head = as_queued(described[0], attempt.queue_verdict, attempt.queue_head)
    held = cap_wait(record.team, record.team_gpus, record.request.gpus, attempt.batch_job_id, regional)
    explanation = held or behind(diagnose(pool_evidence(job, attempt.job_queue, now_iso(), regional)), head)
    # What the workflow will do about this cause, and when: a fallback it promises is dated.
    action = next_action(record, explanation.category) or view.next_action
    explained = with_next_action(explanation, action, attempt.region)
    return view.model_copy(update={"explanation": explained, "next_action": action})


def list_jobs(
    status: JobStatus | None, limit: int, next_token: str | None, ports: Ports, team: str | None = None
) -> JobList:
    """Newest first; `team`: that team's jobs only."""
    records, token = ports.jobs.list_jobs(status, limit, next_token, team)
    return JobList(jobs=[job_view(r) for r in records], next_token=token)


def cancel_job(job_id: str, ports: Ports, caller: Caller | None = None, reason: str = CANCELLED_REASON) -> JobView:
    """Stop the workflow and the Batch attempt, saying why; JobAlreadyFinished (409) once the job has ended (or Batch
    has ended the attempt whose outcome is the job's, which the workflow is about to record). What it holds of its
    team's budget is settled (an attempt still running is priced when Batch says it ended, and settled then)."""
    record = owned_job(job_id, ports, caller)
    if shown_status(record).finished or not ports.jobs.finish(
        job_id, JobStatus.CANCELLED, fields={"error": reason}, reason=reason
    ):
        raise JobAlreadyFinished(job_id)
    # Read again after the cancel is recorded: an attempt submitted meanwhile is in this read, or its
    # SubmitBatchJob sees the cancel and terminates it itself. GPUs first, then the workflow.
    cancelled = ports.jobs.get_job(job_id)
    terminate_live_attempts(cancelled, reason, ports)
    if record.execution_arn:
        ports.workflow.stop_execution(record.execution_arn, error="Cancelled", cause=reason)
    settle(job_id, ports, cancelled)
    return job_view(cancelled)
