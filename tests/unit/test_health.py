"""Health sweep findings: stuck RUNNABLE jobs, INVALID compute environments, and the summary."""

from __future__ import annotations

from typing import Any

from functions.shared.domain.core.clock import iso_from_millis
from functions.shared.domain.core.vocabulary import DiagnosisCategory, Severity
from functions.shared.domain.diagnosis.findings import Finding
from functions.shared.domain.diagnosis.runnable import StuckJobSnapshot, diagnose
from functions.shared.domain.fleet.batch import BatchJobState, ComputeEnvironmentState
from functions.shared.domain.health.sweep import StuckTally, grouped, invalid_environment_finding, summarize
from functions.shared.domain.requests.job_request import JobRequest
from tests.unit.builders import job_request

NOW_MS = 1_714_566_896_000.0
MINUTE_MS = 60_000
NOW = iso_from_millis(NOW_MS)
ENVIRONMENT = ComputeEnvironmentState.from_batch(
    {
        "computeEnvironmentName": "gpupilot-od-x8664-g5-xlarge",
        "computeEnvironmentArn": "arn:aws:batch:us-east-1:123456789012:compute-environment/gpupilot-od-x8664-g5-xlarge",
        "status": "VALID",
    }
)


def batch_job(status: str = "RUNNABLE", minutes_ago: float = 20, **fields: Any) -> BatchJobState:
    return BatchJobState.from_batch(
        {
            "jobId": "batch-1",
            "status": status,
            "createdAt": NOW_MS - minutes_ago * MINUTE_MS,
            "jobQueue": "arn:aws:batch:us-east-1:123456789012:job-queue/gpupilot-od-x8664-g5-xlarge",
            **fields,
        }
    )


def stuck(job_id: str, request: JobRequest, job: BatchJobState, environment: ComputeEnvironmentState) -> Finding | None:
    """The sweep's finding for one job, or None when it has not waited its stuck_after yet (or is not RUNNABLE)."""
    snapshot = StuckJobSnapshot(job=job, environment=environment, at=NOW)
    if job.status != "RUNNABLE" or snapshot.runnable_seconds < request.stuck_after_minutes * 60:
        return None
    tally = StuckTally(diagnose(snapshot), environment.name)
    tally.add(job_id, foreign=False)
    return tally.finding()


def finding(kind: DiagnosisCategory) -> Finding:
    return Finding(kind=kind, severity=Severity.WARNING, resource="r", recommendation="x")


# -- stuck_finding ----------------------------------------------------------------------------------
def test_runnable_job_past_its_stuck_after_minutes_is_a_finding():
    # Given a job RUNNABLE for 20 minutes with a capacity reason, and the default 15-minute threshold
    job = batch_job(minutes_ago=20, statusReason="CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - none")

    # When sweeping
    result = stuck("job-a", job_request(), job, ENVIRONMENT)

    # Then the finding names the diagnosis, the queue and the job
    assert result is not None
    assert result.kind == DiagnosisCategory.INSUFFICIENT_CAPACITY
    assert result.severity == "critical"
    assert result.resource == ENVIRONMENT.name
    assert result.jobs == ["job-a"]
    assert result.evidence["reason"] == "AWS Batch says: CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - none"
    assert result.evidence["runnable_seconds"] == 1200


def test_runnable_job_younger_than_its_stuck_after_minutes_is_not_a_finding():
    # Given a job RUNNABLE for 10 minutes and the default 15-minute threshold
    # When / Then
    assert stuck("job-a", job_request(), batch_job(minutes_ago=10), ENVIRONMENT) is None


def test_threshold_is_the_requests_own_stuck_after_minutes():
    # Given a job RUNNABLE for 10 minutes whose request says stuck after 5
    request = job_request(stuck_after_minutes=5)

    # When
    result = stuck("job-a", request, batch_job(minutes_ago=10), ENVIRONMENT)

    # Then it is stuck, and without a Batch reason it is waiting for scale up (informational)
    assert result is not None
    assert (result.kind, result.severity) == (DiagnosisCategory.WAITING_FOR_SCALE_UP, "info")


def test_jobs_that_are_not_runnable_are_never_stuck():
    # Given a job RUNNING for an hour
    # When / Then
    assert stuck("job-a", job_request(), batch_job("RUNNING", minutes_ago=60), ENVIRONMENT) is None


def test_stuck_job_in_an_invalid_environment_is_diagnosed_as_such():
    # Given a stuck job whose compute environment is INVALID
    environment = ENVIRONMENT.model_copy(update={"status": "INVALID", "status_reason": "CLIENT_ERROR - bad subnet"})

    # When
    result = stuck("job-a", job_request(), batch_job(minutes_ago=20), environment)

    # Then
    assert result is not None
    assert result.kind == DiagnosisCategory.COMPUTE_ENVIRONMENT_INVALID


def test_stuck_jobs_are_one_finding_per_pool_and_cause_with_every_job_counted():
    # Given 60 jobs stuck for capacity in one pool
    capacity = batch_job(minutes_ago=20, statusReason="CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - none")
    each = [stuck(f"job-{n}", job_request(), capacity, ENVIRONMENT) for n in range(60)]

    # When they are grouped
    [result] = grouped([f for f in each if f])

    # Then one finding names the first 50 and counts all 60
    assert len(result.jobs) == 50 and result.evidence["jobs_stuck"] == 60


# -- invalid_environment_finding ----------------------------------------------------------------------
def test_invalid_compute_environment_is_a_critical_finding_with_its_reason():
    # Given an INVALID compute environment
    environment = ENVIRONMENT.model_copy(
        update={"status": "INVALID", "status_reason": "CLIENT_ERROR - bad subnet", "state": "ENABLED"}
    )

    # When
    result = invalid_environment_finding(environment)

    # Then
    assert result is not None
    assert (result.kind, result.severity) == (DiagnosisCategory.COMPUTE_ENVIRONMENT_INVALID, "critical")
    assert result.resource == "gpupilot-od-x8664-g5-xlarge"  # the pool, as every finding names it
    assert result.evidence == {
        "compute_environment": "gpupilot-od-x8664-g5-xlarge",
        "compute_environment_arn": ENVIRONMENT.arn,
        "compute_environment_status": "INVALID",
        "compute_environment_reason": "CLIENT_ERROR - bad subnet",
        "state": "ENABLED",
    }


def test_valid_compute_environment_is_not_a_finding():
    # Given / When / Then
    assert invalid_environment_finding(ENVIRONMENT) is None


# -- summarize -------------------------------------------------------------------------------------
def test_summary_counts_findings_by_kind_and_reconciled_events():
    # Given three findings of two kinds
    findings = [
        finding(DiagnosisCategory.INSUFFICIENT_CAPACITY),
        finding(DiagnosisCategory.INSUFFICIENT_CAPACITY),
        finding(DiagnosisCategory.COMPUTE_ENVIRONMENT_INVALID),
    ]

    # When
    summary = summarize(findings, reconciled=4)

    # Then
    assert summary == {
        "findings": 3,
        "reconciled_events": 4,
        "INSUFFICIENT_CAPACITY": 2,
        "COMPUTE_ENVIRONMENT_INVALID": 1,
    }


def test_summary_of_a_clean_sweep_has_only_the_totals():
    # Given / When / Then
    assert summarize([], reconciled=0) == {"findings": 0, "reconciled_events": 0}
