"""The sweep's stuck jobs: every RUNNABLE job past its stuck_after, diagnosed once per pool and cause, its pool's
finding joined by the jobs it holds up, and those past the deployment's cancel limit cancelled."""

from __future__ import annotations

from functions.shared.domain.capacity.quotas import RunningInstances
from functions.shared.domain.core.clock import seconds_between
from functions.shared.domain.core.vocabulary import BatchStatus, DiagnosisCategory
from functions.shared.domain.diagnosis.findings import Finding
from functions.shared.domain.diagnosis.runnable import SCALE_UP_GRACE_SECONDS, StuckJobSnapshot, diagnose
from functions.shared.domain.fleet.analysis import FleetAnalysis
from functions.shared.domain.fleet.batch import ComputeEnvironmentState, FleetState
from functions.shared.domain.health.sweep import StuckTally, grouped
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.ports import Ports
from functions.shared.usecases.fleet.evidence import read_snapshot
from functions.shared.usecases.health.jobs import SweptJobs
from functions.shared.usecases.health.remediate import cancel_past_limit

# Jobs others submitted into GPU Pilot's queues have no stuck_after of their own.
DEFAULT_STUCK_AFTER_MINUTES = JobRequest.model_fields["stuck_after_minutes"].default


def stuck_findings(
    swept: SweptJobs,
    pools: dict[str, ComputeEnvironmentState],
    fleets: dict[str, FleetState],
    analyses: dict[str, FleetAnalysis],
    invalid: list[Finding],
    at: str,
    ports: Ports,
) -> list[Finding]:
    """Jobs RUNNABLE past their stuck_after (GPU Pilot's) or the default (others'), one finding per pool and cause;
    the jobs stuck in an INVALID pool join its `invalid` finding.

    A diagnosis depends on the job only through its statusReason and how long it has waited against the
    diagnosis' thresholds, so one diagnosis per pool, reason and threshold side serves all the jobs that share
    them: the sweep's cost per job is a lookup, whatever the number of jobs.
    """
    snapshots: dict[str, StuckJobSnapshot] = {}
    # The account's running instances (what vCPU quotas count) are the same for every pool: read once per sweep.
    running: dict[bool, list[RunningInstances]] = {}
    tallies: dict[tuple[str, str | None, bool, bool], StuckTally] = {}
    limit_seconds = ports.settings.cancel_stuck_after_minutes * 60
    launch_grace = ports.settings.launch_grace_seconds
    for batch_job in swept.live.values():
        if batch_job.status != BatchStatus.RUNNABLE or not batch_job.created_at:
            continue
        owner = swept.owners.get(batch_job.job_id)
        latest = owner.latest_attempt() if owner else None
        if latest and latest[1].diagnosis and latest[1].diagnosis.category == DiagnosisCategory.TEAM_GPU_CAP:
            continue  # its team's GPU cap holds it, not its pool: no finding, and never cancelled for waiting
        waited = seconds_between(batch_job.created_at, at)
        if waited < ((owner.stuck_after_minutes if owner else None) or DEFAULT_STUCK_AFTER_MINUTES) * 60:
            continue
        pool = batch_job.job_queue.rsplit("/", 1)[-1]
        key = (pool, batch_job.status_reason, waited >= SCALE_UP_GRACE_SECONDS, waited >= launch_grace)
        tally = tallies.get(key)
        if tally is None:
            if pool not in snapshots:
                environment = pools.get(pool) or ComputeEnvironmentState(name=pool)
                snapshots[pool] = read_snapshot(
                    batch_job, environment, fleets.get(pool), at, ports, analysis=analyses.get(pool), running=running
                )
            snapshot = snapshots[pool].model_copy(update={"job": batch_job})
            tally = tallies[key] = StuckTally(diagnose(snapshot), snapshots[pool].environment.name)
        tally.add(owner.job_id if owner else batch_job.job_id, owner is None)
        if limit_seconds and waited >= limit_seconds:
            tally.past_limit.append(batch_job)
    findings = grouped(invalid + [tally.finding() for tally in tallies.values()])
    for finding in findings:
        group = (finding.resource, finding.kind)
        past_limit = [job for t in tallies.values() if (t.pool, t.diagnosis.category) == group for job in t.past_limit]
        if past_limit:
            cancel_past_limit(finding, past_limit, ports)
    return findings
