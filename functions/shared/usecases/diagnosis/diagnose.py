"""DiagnoseStuckJob and DiagnoseReclaimedJob: why the attempt is not running, and what the workflow does about it."""

from __future__ import annotations

from functions.shared.domain.core.clock import now_iso, seconds_between
from functions.shared.domain.core.vocabulary import (
    BatchStatus,
    CapacityType,
    DiagnosisCategory,
    JobStatus,
    MetricName,
    Remedy,
)
from functions.shared.domain.diagnosis.reclaims import reclaim_diagnosis
from functions.shared.domain.diagnosis.runnable import Diagnosis, as_queued, behind, diagnose, remedy
from functions.shared.domain.diagnosis.verdicts import batch_category
from functions.shared.domain.fleet.batch import BatchJobEvent, BatchJobState
from functions.shared.domain.jobs.records import AttemptRecord, DiagnosisOutcome, JobRecord
from functions.shared.domain.jobs.steps import DiagnoseInput
from functions.shared.ports import Ports
from functions.shared.usecases.capacity.fallback import leave_offering
from functions.shared.usecases.fleet.evidence import pool_evidence
from functions.shared.usecases.jobs.track import record_batch_event
from functions.shared.usecases.teams.caps import cap_wait


def _started(job: BatchJobState) -> bool:
    return job.status in BatchStatus.__members__ and BatchStatus(job.status).started


def _reclaimed(job: BatchJobState, payload: DiagnoseInput) -> bool:
    """A spot attempt that Batch ended because EC2 took its host back (its retries, if any, spent)."""
    return payload.batch_job.capacity == CapacityType.SPOT and job.status == "FAILED" and job.host_terminated


def diagnose_stuck_job(payload: DiagnoseInput, ports: Ports) -> DiagnosisOutcome:
    """Say why the attempt is still waiting (or ended reclaimed); on a cause another GPU type can cure, cancel it
    and fall back."""
    number = payload.batch_job.attempt
    # The attempt's job, pool and fleet are in its candidate's region.
    ports = ports.in_region(payload.selection.current().region)
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
    if _reclaimed(job, payload):
        return _fall_back_from_reclaim(payload, record, recorded, job, at, ports)
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
    # A job behind the one heading its queue: Batch's verdict on that one holds it too (jobs/queue_verdicts.py).
    job, head = as_queued(job, recorded.queue_verdict, recorded.queue_head) if recorded else (job, None)
    # Its team's GPU cap first: while the team holds every GPU it may, Batch launches nothing for the job, whatever the
    # fleet shows (and another GPU type meets the same cap).
    diagnosis = cap_wait(record.team, record.team_gpus, payload.request.gpus, batch_job_id, ports) or behind(
        diagnose(pool_evidence(job, payload.queue.compute_environment, at, ports)), head
    )
    chosen, next_index = remedy(diagnosis, payload.selection.index, len(payload.selection.candidates), checks_spent)
    return _act(payload, record, diagnosis, chosen, next_index, checks_spent, job, at, ports)


def _fall_back_from_reclaim(
    payload: DiagnoseInput,
    record: JobRecord,
    recorded: AttemptRecord | None,
    job: BatchJobState,
    at: str,
    ports: Ports,
) -> DiagnosisOutcome:
    """DiagnoseReclaimedJob: EC2 reclaimed the attempt's spot hosts as many times as the request allows; the job
    goes to its next candidate, and the spot offering where it ran is remembered as unavailable."""
    selection = payload.selection
    following = selection.candidates[selection.index + 1] if selection.index + 1 < len(selection.candidates) else None
    zone = (
        ports.fleet.zone_of(recorded.container_instance_arn) if recorded and recorded.container_instance_arn else None
    )
    diagnosis = reclaim_diagnosis(
        payload.batch_job.instance_type,
        job.host_terminations,
        payload.request.spot_reclaims_before_fallback,
        zone,
        following.instance_type if following else None,
        following.capacity.value if following else None,
    )
    chosen, next_index = remedy(diagnosis, selection.index, len(selection.candidates), 0)
    return _act(payload, record, diagnosis, chosen, next_index, 0, job, at, ports, zones=[zone] if zone else None)


def _act(
    payload: DiagnoseInput,
    record: JobRecord,
    diagnosis: Diagnosis,
    chosen: Remedy,
    next_index: int,
    checks_spent: int,
    job: BatchJobState,
    at: str,
    ports: Ports,
    zones: list[str] | None = None,
) -> DiagnosisOutcome:
    """Record the diagnosis and its remedy on the attempt (and its wait's timeline entry); on a fallback, remember
    the offering as unavailable and cancel the Batch job if it still waits."""
    number = payload.batch_job.attempt
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
    ports.jobs.update_attempt(
        payload.job_id, number, fields, timeline_reason=_explained(record, number, diagnosis, job, at)
    )
    if chosen == Remedy.FALL_BACK:
        leave_offering(payload.selection.current(), diagnosis, ports, zones=zones)
        if not (job.status in BatchStatus.__members__ and BatchStatus(job.status).ended):
            ports.batch.terminate_job(
                payload.batch_job.batch_job_id, f"GPU Pilot fell back: {diagnosis.category.value}"[:255]
            )
    ports.metrics.add(MetricName.STUCK_JOB_DIAGNOSES, 1)
    return outcome


def _explained(
    record: JobRecord, number: int, diagnosis: Diagnosis, job: BatchJobState, at: str
) -> tuple[int, str, str] | None:
    """The wait's RUNNABLE entry says why it waits, in the write that records the diagnosis; Batch's own words stay
    there (with when Batch said them) when the diagnosis only restates them."""
    entry = record.entry_for(JobStatus.RUNNABLE, number)
    if entry is None:
        return None
    said = record.timeline[entry].reason
    if said and said == job.status_reason and batch_category(said) == diagnosis.category:
        return None
    return entry, f"{diagnosis.category.value}: {diagnosis.reason}", at
