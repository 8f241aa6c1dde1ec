"""SubmitBatchJob: one attempt per candidate, submitted to its pool's queue exactly once."""

from __future__ import annotations

from functions.shared.domain.core.errors import BudgetExceeded, JobAlreadyFinished
from functions.shared.domain.core.vocabulary import AttemptStatus, JobStatus
from functions.shared.domain.jobs.definitions import ATTEMPT_TAG, JOB_TAG, job_definition_spec
from functions.shared.domain.jobs.lifecycle import batch_job_name
from functions.shared.domain.jobs.records import AttemptRecord
from functions.shared.domain.jobs.steps import SubmitInput, SubmittedJob
from functions.shared.domain.teams.caps import team_of
from functions.shared.ports import Ports
from functions.shared.usecases.teams.budgets import commit_attempt
from functions.shared.usecases.teams.caps import cap_wait

CANCELLED_REASON = "cancelled by request"


def submit_batch_job(payload: SubmitInput, ports: Ports) -> SubmittedJob:
    """Record the attempt, register the job definition and submit; a retried call returns the same attempt.

    The attempt is recorded before the Batch job exists, so an event that outruns this Lambda still finds
    its attempt (events find attempts by the Batch job's name alone). A retry after a submit whose record
    write failed finds the Batch job by its unique name: never two.
    """
    candidate = payload.selection.current()
    number = payload.selection.attempt
    if payload.budgeted:
        # What the job may spend now is committed first; a budget with no room stops the job instead of spending.
        refused = commit_attempt(ports.jobs.get_job(payload.job_id), candidate, ports)
        if refused is not None:
            raise BudgetExceeded(refused)
    # The attempt's Batch calls go to its candidate's region; its record stays home.
    ports = ports.in_region(candidate.region)
    job_queue = payload.queue.job_queue
    reserved = ports.jobs.put_attempt(
        payload.job_id, number, AttemptRecord.of(candidate, job_queue, AttemptStatus.SUBMITTED)
    )
    if reserved.batch_job_id:
        return SubmittedJob(
            batch_job_id=reserved.batch_job_id,
            job_queue=reserved.job_queue,
            job_definition=reserved.job_definition or "",
            attempt=number,
            instance_type=reserved.instance_type,
            capacity=reserved.capacity,
            region=reserved.region,
        )
    name = batch_job_name(payload.job_id, number)
    found = ports.batch.find_job(job_queue, name)
    if found is not None:
        batch_job_id, definition = found.job_id, found.job_definition
    else:
        spec = job_definition_spec(
            payload.job_id,
            payload.request,
            candidate,
            job_role_arn=ports.settings.job_role_arn,
            execution_role_arn=ports.settings.job_execution_role_arn,
            region=ports.settings.region,
            team_gpus=payload.team_gpus,
            attempt=number,
            hosts_bucket=ports.settings.hosts_bucket,
            home_region=ports.settings.home,
        )
        definition = ports.batch.register_job_definition(spec)
        # A fair-share queue refuses a job without a shareIdentifier, a FIFO queue one with it (AWS Batch API
        # Reference, "SubmitJob", shareIdentifier): the deployment's pools are all one or all the other.
        share = payload.share if ports.settings.fair_share_policy else None
        batch_job_id = ports.batch.submit_job(
            name, job_queue, definition, tags={JOB_TAG: payload.job_id, ATTEMPT_TAG: str(number)}, share=share
        )
    ports.jobs.update_attempt(payload.job_id, number, {"batch_job_id": batch_job_id, "job_definition": definition})
    if ports.jobs.get_job(payload.job_id).status.finished:
        # Cancelled while we were submitting: the cancel may not have seen this Batch job.
        ports.batch.terminate_job(batch_job_id, CANCELLED_REASON)
        raise JobAlreadyFinished(payload.job_id)
    where = f"{job_queue} ({candidate.region})" if candidate.region and ports.settings.several_regions else job_queue
    waiting = f"Batch job {batch_job_id} in {where}: waiting for a {candidate.instance_type} instance"
    team = team_of(payload.team_gpus, ports.settings.resource_prefix) if payload.team_gpus else None
    held = cap_wait(team, payload.team_gpus, payload.request.gpus, batch_job_id, ports)
    if held is not None:
        # Its team's cap holds it, not the fleet: said at once (no instance is launched for it until the team has room).
        waiting = f"{held.category.value}: {held.reason}"
        ports.jobs.update_attempt(payload.job_id, number, {"diagnosis": held})
    ports.jobs.advance(payload.job_id, JobStatus.RUNNABLE, attempt=number, reason=waiting)
    return SubmittedJob(
        batch_job_id=batch_job_id,
        job_queue=job_queue,
        job_definition=definition,
        attempt=number,
        instance_type=candidate.instance_type,
        capacity=candidate.capacity,
        region=candidate.region,
    )
