"""Why a job is RUNNABLE, and what the workflow does about it."""

from __future__ import annotations

import pytest

from functions.shared.domain.core.clock import iso_from_millis
from functions.shared.domain.core.vocabulary import DiagnosisCategory, Remedy
from functions.shared.domain.diagnosis.runnable import MAX_WAIT_CHECKS, Diagnosis, StuckJobSnapshot, diagnose, remedy
from functions.shared.domain.fleet.batch import BatchJobState, ComputeEnvironmentState

Category = DiagnosisCategory
NOW_MS = 1_800_000_000_000


def snapshot(
    status_reason: str | None = None,
    runnable_seconds: float = 600,
    compute_environment_status: str = "VALID",
    compute_environment_reason: str | None = None,
) -> StuckJobSnapshot:
    """A RUNNABLE job read `runnable_seconds` after it was created, in a compute environment."""
    job = BatchJobState(
        job_id="job-1234",
        status="RUNNABLE",
        status_reason=status_reason,
        created_at=iso_from_millis(NOW_MS - runnable_seconds * 1000),
    )
    environment = ComputeEnvironmentState(
        name="gpupilot-od-x8664-g5-xlarge", status=compute_environment_status, status_reason=compute_environment_reason
    )
    return StuckJobSnapshot(job=job, environment=environment, at=iso_from_millis(NOW_MS))


def diagnosis_of(category: Category) -> Diagnosis:
    return Diagnosis(category=category, reason="r", recommendation="do something")


# -- diagnose ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("status_reason", "category"),
    [
        (
            "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - Service cannot fulfill the capacity requested",
            Category.INSUFFICIENT_CAPACITY,
        ),
        ("MISCONFIGURATION:COMPUTE_ENVIRONMENT_MAX_RESOURCE - CE(s) reached max vCPUs", Category.MAX_VCPUS_REACHED),
        ("MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT - The job requires more vCPUs", Category.JOB_TOO_LARGE),
        (
            "MISCONFIGURATION:EC2_INSTANCE_CONFIGURATION_UNSUPPORTED - g6.xlarge not supported in subnets",
            Category.NOT_OFFERED,
        ),
        (
            "MISCONFIGURATION:SERVICE_ROLE_PERMISSIONS - Batch cannot call ec2:RunInstances",
            Category.SERVICE_ROLE_PERMISSIONS,
        ),
        ("ACTION_REQUIRED - CE(s) associated with the job queue are invalid", Category.COMPUTE_ENVIRONMENT_INVALID),
    ],
)
def test_batch_status_reason_prefix_maps_to_its_category(status_reason, category):
    # Given a RUNNABLE job whose Batch statusReason starts with a known prefix
    # When diagnosing
    result = diagnose(snapshot(status_reason=status_reason))

    # Then the category is the prefix's, and the reason quotes Batch
    assert result.category == category
    assert result.reason == f"AWS Batch says: {status_reason}"


def test_invalid_compute_environment_wins_over_the_job_status_reason():
    # Given an INVALID compute environment and a capacity statusReason on the job
    result = diagnose(
        snapshot(
            status_reason="CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - no capacity",
            compute_environment_status="INVALID",
            compute_environment_reason="CLIENT_ERROR - instance profile not found",
        )
    )

    # Then the diagnosis is the invalid environment, naming it and its reason
    assert result.category == Category.COMPUTE_ENVIRONMENT_INVALID
    assert result.reason == (
        "compute environment gpupilot-od-x8664-g5-xlarge is INVALID: CLIENT_ERROR - instance profile not found"
    )
    assert result.evidence["compute_environment_reason"] == "CLIENT_ERROR - instance profile not found"


def test_invalid_compute_environment_without_a_reason_says_so():
    # Given / When: INVALID without a statusReason
    result = diagnose(snapshot(compute_environment_status="INVALID"))

    # Then the reason says none was given
    assert result.reason.endswith("is INVALID: no statusReason given")


def test_evidence_carries_the_job_its_reason_and_its_compute_environment():
    # Given a stuck job with a capacity reason
    reason = "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY - no capacity"

    # When diagnosing
    result = diagnose(snapshot(status_reason=reason, runnable_seconds=901.4))

    # Then the evidence names the Batch job, its reason, how long, and the compute environment
    assert result.evidence == {
        "batch_job_id": "job-1234",
        "status": "RUNNABLE",
        "status_reason": reason,
        "runnable_seconds": 901,
        "compute_environment": "gpupilot-od-x8664-g5-xlarge",
        "compute_environment_status": "VALID",
    }


def test_young_job_without_a_reason_is_waiting_for_scale_up():
    # Given a job RUNNABLE for 10 minutes and no statusReason
    # When diagnosing
    result = diagnose(snapshot(status_reason=None, runnable_seconds=600))

    # Then it is waiting for the pool to scale up
    assert result.category == Category.WAITING_FOR_SCALE_UP
    assert result.reason == "RUNNABLE for 600 s and Batch gives no reason"


def test_old_job_without_a_reason_is_undetermined():
    # Given a job RUNNABLE for 30 minutes and no statusReason
    # When diagnosing
    result = diagnose(snapshot(status_reason=None, runnable_seconds=1800))

    # Then the cause is undetermined
    assert result.category == Category.UNDETERMINED


def test_unknown_status_reason_is_treated_like_no_reason():
    # Given a reason no prefix matches
    # When diagnosing a young job
    result = diagnose(snapshot(status_reason="SOMETHING_NEW - Batch invented a reason", runnable_seconds=60))

    # Then it is waiting for scale up
    assert result.category == Category.WAITING_FOR_SCALE_UP


# -- remedy ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "category",
    [
        Category.INSUFFICIENT_CAPACITY,
        Category.NOT_OFFERED,
        Category.ECS_AGENT_NOT_REGISTERED,
        Category.GPU_NOT_REGISTERED,
        Category.COMPUTE_ENVIRONMENT_INVALID,
        Category.AGENT_DISCONNECTED,
        Category.NO_INSTANCES_LAUNCHED,
        Category.JOB_TOO_LARGE,
    ],
)
def test_capacity_like_causes_fall_back_to_the_next_candidate(category):
    # Given the first of three candidates is stuck for a cause another type can cure
    # When choosing the remedy
    action = remedy(diagnosis_of(category), index=0, candidates=3, checks=0)

    # Then the workflow falls back to candidate 1
    assert action == (Remedy.FALL_BACK, 1)


def test_falling_back_past_the_last_candidate_gives_up():
    # Given the last of three candidates has no capacity
    # When choosing the remedy
    action = remedy(diagnosis_of(Category.INSUFFICIENT_CAPACITY), index=2, candidates=3, checks=0)

    # Then the workflow gives up on the same index
    assert action == (Remedy.GIVE_UP, 2)


@pytest.mark.parametrize(
    "category",
    [
        Category.WAITING_FOR_SCALE_UP,
        Category.MAX_VCPUS_REACHED,
        Category.WAITING_FOR_RESERVATION,
        Category.UNDETERMINED,
    ],
)
def test_time_curable_causes_keep_waiting_below_the_check_limit(category):
    # Given a cause time can cure, checked fewer times than the limit
    # When choosing the remedy
    action = remedy(diagnosis_of(category), index=1, candidates=3, checks=MAX_WAIT_CHECKS - 1)

    # Then the workflow keeps waiting on the same candidate
    assert action == (Remedy.KEEP_WAITING, 1)


def test_waiting_gives_up_once_the_check_limit_is_reached():
    # Given a scale-up wait checked MAX_WAIT_CHECKS times already
    # When choosing the remedy
    action = remedy(diagnosis_of(Category.WAITING_FOR_SCALE_UP), index=0, candidates=3, checks=MAX_WAIT_CHECKS)

    # Then the workflow gives up
    assert action == (Remedy.GIVE_UP, 0)


def test_a_service_role_batch_cannot_use_gives_up_at_once():
    # Given a service role Batch cannot use, with candidates left (every pool shares that role)
    # When choosing the remedy
    action = remedy(diagnosis_of(Category.SERVICE_ROLE_PERMISSIONS), index=0, candidates=5, checks=0)

    # Then the workflow gives up
    assert action == (Remedy.GIVE_UP, 0)
