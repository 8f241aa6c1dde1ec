"""Health sweep findings: stuck RUNNABLE jobs, INVALID compute environments, and the summary."""

from __future__ import annotations

from typing import Any

from functions.shared.domain.batch import BatchJobState, ComputeEnvironmentState
from functions.shared.domain.clock import iso_from_millis
from functions.shared.domain.health import invalid_environment_finding, stuck_finding, summarize
from functions.shared.domain.views import Finding
from functions.shared.domain.vocabulary import DiagnosisCategory, Severity
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


def finding(kind: DiagnosisCategory) -> Finding:
    return Finding(kind=kind, severity=Severity.WARNING, resource="r", recommendation="x")


# -- stuck_finding ----------------------------------------------------------------------------------
def test_runnable_job_past_its_stuck_after_minutes_is_a_finding():
    # Given a job RUNNABLE for 20 minutes with a capacity reason, and the default 15-minute threshold
    job = batch_job(minutes_ago=20, statusReason="CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - none")

    # When sweeping
    result = stuck_finding("job-a", job_request(), job, ENVIRONMENT, NOW)

    # Then the finding names the diagnosis, the queue and the job
    assert result is not None
    assert result.kind == DiagnosisCategory.INSUFFICIENT_CAPACITY
    assert result.severity == "critical"
    assert result.resource == job.job_queue
    assert result.jobs == ["job-a"]
    assert result.evidence["reason"] == "AWS Batch says: CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - none"
    assert result.evidence["runnable_seconds"] == 1200


def test_runnable_job_younger_than_its_stuck_after_minutes_is_not_a_finding():
    # Given a job RUNNABLE for 10 minutes and the default 15-minute threshold
    # When / Then
    assert stuck_finding("job-a", job_request(), batch_job(minutes_ago=10), ENVIRONMENT, NOW) is None


def test_threshold_is_the_requests_own_stuck_after_minutes():
    # Given a job RUNNABLE for 10 minutes whose request says stuck after 5
    request = job_request(stuck_after_minutes=5)

    # When
    result = stuck_finding("job-a", request, batch_job(minutes_ago=10), ENVIRONMENT, NOW)

    # Then it is stuck, and without a Batch reason it is waiting for scale up (informational)
    assert result is not None
    assert (result.kind, result.severity) == (DiagnosisCategory.WAITING_FOR_SCALE_UP, "info")


def test_jobs_that_are_not_runnable_are_never_stuck():
    # Given a job RUNNING for an hour
    # When / Then
    assert stuck_finding("job-a", job_request(), batch_job("RUNNING", minutes_ago=60), ENVIRONMENT, NOW) is None


def test_stuck_job_in_an_invalid_environment_is_diagnosed_as_such():
    # Given a stuck job whose compute environment is INVALID
    environment = ENVIRONMENT.model_copy(update={"status": "INVALID", "status_reason": "CLIENT_ERROR - bad subnet"})

    # When
    result = stuck_finding("job-a", job_request(), batch_job(minutes_ago=20), environment, NOW)

    # Then
    assert result is not None
    assert result.kind == DiagnosisCategory.COMPUTE_ENVIRONMENT_INVALID


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
    assert result.resource == ENVIRONMENT.arn
    assert result.evidence == {
        "compute_environment": "gpupilot-od-x8664-g5-xlarge",
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
