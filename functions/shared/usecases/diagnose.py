"""DiagnoseStuckJob: why is the attempt still waiting, and what the workflow does about it."""

from __future__ import annotations

from functions.shared.domain.batch import BatchJobEvent, BatchJobState
from functions.shared.domain.clock import now_iso, seconds_between
from functions.shared.domain.diagnosis import diagnose, remedy
from functions.shared.domain.records import DiagnosisOutcome
from functions.shared.domain.steps import DiagnoseInput
from functions.shared.domain.vocabulary import BatchStatus, DiagnosisCategory, JobStatus, MetricName, Remedy
from functions.shared.ports import Ports
from functions.shared.usecases.evidence import pool_evidence
from functions.shared.usecases.fallback import leave_offering
from functions.shared.usecases.track import record_batch_event


def _started(job: BatchJobState) -> bool:
    return job.status in BatchStatus.__members__ and BatchStatus(job.status).started


def diagnose_stuck_job(payload: DiagnoseInput, ports: Ports) -> DiagnosisOutcome:
    """Say why the attempt is still waiting; on a cause another GPU type can cure, cancel it and fall back."""
    number = payload.batch_job.attempt
    record = ports.jobs.get_job(payload.job_id)
    recorded = record.attempts.get(number)
    if recorded is not None and recorded.fell_back is not None:
        # A retry of a diagnosis that already cancelled this attempt: answer what it answered.
        return recorded.fell_back
    batch_job_id = payload.batch_job.batch_job_id
    described = ports.batch.describe_jobs([batch_job_id])
    job = described[0] if described else BatchJobState(job_id=batch_job_id, status="UNKNOWN")
    checks_spent = int((payload.previous or {}).get("checks", 0))
    at = now_iso()
    if _started(job):
        # Its start event lost the race with the timeout (or never came): record what Batch says, so the
        # wait resumes at once, and spend no check.
        record_batch_event(BatchJobEvent(at=at, job=job), ports)
        return DiagnosisOutcome(
            category=DiagnosisCategory.WAITING_FOR_SCALE_UP,
            reason=f"the job is {job.status}: it started as the wait timed out",
            evidence={"batch_job_id": job.job_id, "status": job.status},
            recommendation="None: the workflow waits for it again.",
            remedy=Remedy.KEEP_WAITING,
            next_index=payload.selection.index,
            checks=checks_spent,
        )
    diagnosis = diagnose(pool_evidence(job, payload.queue.compute_environment, at, ports))
    chosen, next_index = remedy(diagnosis, payload.selection.index, len(payload.selection.candidates), checks_spent)
    give_up_after = payload.request.give_up_after_minutes
    if chosen != Remedy.GIVE_UP and give_up_after and seconds_between(record.created_at, at) >= give_up_after * 60:
        # The request bounds its total wait: no further attempt, however curable the cause.
        chosen, next_index = Remedy.GIVE_UP, payload.selection.index
        diagnosis.evidence["give_up_after_minutes"] = give_up_after
        diagnosis.reason += f" (and the job has waited its give_up_after_minutes, {give_up_after:g})"
    outcome = DiagnosisOutcome(
        **diagnosis.model_dump(),
        remedy=chosen,
        next_index=next_index,
        checks=0 if chosen == Remedy.FALL_BACK else checks_spent + 1,
    )
    fields: dict[str, object] = {"diagnosis": diagnosis}
    if chosen == Remedy.FALL_BACK:
        # Written before the Batch job is cancelled, so a retried diagnosis repeats this answer.
        fields["fell_back"] = outcome
    # The wait's RUNNABLE entry says why it waits, in the write that records the diagnosis.
    entry = record.entry_for(JobStatus.RUNNABLE, number)
    explained = (entry, f"{diagnosis.category.value}: {diagnosis.reason}") if entry is not None else None
    ports.jobs.update_attempt(payload.job_id, number, fields, timeline_reason=explained)
    if chosen == Remedy.FALL_BACK:
        leave_offering(payload.selection.current(), diagnosis, ports)
        ports.batch.terminate_job(batch_job_id, f"GPU Pilot fell back: {diagnosis.category.value}"[:255])
    ports.metrics.add(MetricName.STUCK_JOB_DIAGNOSES, 1)
    return outcome
