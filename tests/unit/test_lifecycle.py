"""Job status rules: ordering, Batch-to-job mapping, wait conditions, Batch job names and times."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from functions.shared.domain.core.clock import iso_from_millis, normalize_iso
from functions.shared.domain.core.vocabulary import JobStatus
from functions.shared.domain.fleet.batch import billed_seconds
from functions.shared.domain.jobs.lifecycle import (
    FINAL_RANK,
    batch_job_name,
    batch_rank,
    job_status_for_batch,
    parse_batch_job_name,
    status_rank,
    wait_satisfied,
)

IN_FLIGHT = [
    JobStatus.SUBMITTED,
    JobStatus.SELECTING,
    JobStatus.PROVISIONING,
    JobStatus.RUNNABLE,
    JobStatus.STARTING,
    JobStatus.RUNNING,
]
FINISHED = [JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED]


# -- status order -------------------------------------------------------------------------------
def test_statuses_within_one_attempt_rank_in_lifecycle_order():
    # Given / When: the ranks of the in-flight statuses of attempt 1
    ranks = [status_rank(status, attempt=1) for status in IN_FLIGHT]

    # Then they strictly increase
    assert ranks == sorted(ranks)
    assert len(set(ranks)) == len(ranks)


def test_later_attempt_outranks_every_status_of_an_earlier_attempt():
    # Given / When / Then: attempt 2 RUNNABLE (after a fall back) outranks attempt 1 RUNNING
    assert status_rank(JobStatus.RUNNABLE, attempt=2) > status_rank(JobStatus.RUNNING, attempt=1)
    assert status_rank(JobStatus.SUBMITTED, attempt=2) > status_rank(JobStatus.RUNNING, attempt=1)


@pytest.mark.parametrize("status", FINISHED)
def test_finished_statuses_rank_final_whatever_the_attempt(status):
    # Given / When / Then
    assert status_rank(status, attempt=0) == FINAL_RANK
    assert status_rank(status, attempt=7) == FINAL_RANK


def test_final_rank_outranks_any_in_flight_status_of_the_highest_attempt():
    # Given / When / Then: attempt numbers have at most 3 digits in Batch job names
    assert status_rank(JobStatus.RUNNING, attempt=999) < FINAL_RANK


def test_batch_statuses_rank_in_their_lifecycle_order():
    # Given / When / Then
    order = ["SUBMITTED", "PENDING", "RUNNABLE", "STARTING", "RUNNING", "SUCCEEDED"]
    assert [batch_rank(s) for s in order] == sorted(batch_rank(s) for s in order)
    assert batch_rank("FAILED") == batch_rank("SUCCEEDED")


# -- Batch status -> job status ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("batch_status", "job_status"),
    [
        ("SUBMITTED", JobStatus.RUNNABLE),
        ("PENDING", JobStatus.RUNNABLE),
        ("RUNNABLE", JobStatus.RUNNABLE),
        ("STARTING", JobStatus.STARTING),
        ("RUNNING", JobStatus.RUNNING),
        ("SUCCEEDED", JobStatus.SUCCEEDED),
        ("FAILED", JobStatus.FAILED),
    ],
)
def test_batch_status_maps_to_the_job_status_it_stands_for(batch_status, job_status):
    # Given / When / Then
    assert job_status_for_batch(batch_status) == job_status


# -- waits ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("batch_status", "satisfied"),
    [
        (None, False),
        ("SUBMITTED", False),
        ("RUNNABLE", False),
        ("STARTING", True),
        ("RUNNING", True),
        ("SUCCEEDED", True),
        ("FAILED", True),
    ],
)
def test_start_wait_is_satisfied_once_the_job_has_started_or_ended(batch_status, satisfied):
    # Given / When / Then: a job that ends before the start wait parks must not leave it hanging
    assert wait_satisfied("start", batch_status) is satisfied


@pytest.mark.parametrize(
    ("batch_status", "satisfied"),
    [
        (None, False),
        ("RUNNABLE", False),
        ("STARTING", False),
        ("RUNNING", False),
        ("SUCCEEDED", True),
        ("FAILED", True),
    ],
)
def test_finish_wait_is_satisfied_only_by_a_terminal_status(batch_status, satisfied):
    # Given / When / Then
    assert wait_satisfied("finish", batch_status) is satisfied


# -- Batch job names ------------------------------------------------------------------------------
def test_batch_job_name_round_trips_to_job_id_and_attempt():
    # Given a job id as the service makes them (20 hex characters) and attempt 3
    name = batch_job_name("0123456789abcdef0123", 3)

    # When parsing the name back
    parsed = parse_batch_job_name(name)

    # Then the job id and attempt come back
    assert name == "gpupilot-0123456789abcdef0123-a3"
    assert parsed == ("0123456789abcdef0123", 3)


@pytest.mark.parametrize(
    "name",
    [
        "",
        "my-training-job",
        "gpupilot-0123456789abcdef0123",  # no attempt
        "gpupilot-0123456789abcdef0123-a",  # attempt without a number
        "gpupilot-0123456789abcdef0123-a1234",  # attempt with 4 digits
        "gpupilot-ABCDEF0123456789-a1",  # upper case id
        "gpupilot-abc-a1",  # id too short
        "other-gpupilot-0123456789abcdef0123-a1",
    ],
)
def test_names_of_jobs_we_did_not_submit_are_not_parsed(name):
    # Given / When / Then
    assert parse_batch_job_name(name) is None


# -- times ------------------------------------------------------------------------------------------
def test_seconds_precision_z_time_is_normalized_to_milliseconds_z():
    # Given / When / Then: Batch events carry whole seconds
    assert normalize_iso("2024-05-01T12:34:56Z") == "2024-05-01T12:34:56.000Z"


def test_offset_time_is_normalized_to_utc():
    # Given / When / Then
    assert normalize_iso("2024-05-01T14:34:56.5+02:00") == "2024-05-01T12:34:56.500Z"


def test_naive_time_is_taken_as_utc():
    # Given / When / Then
    assert normalize_iso("2024-05-01T12:34:56") == "2024-05-01T12:34:56.000Z"


def test_unparseable_time_is_replaced_by_now():
    # Given a garbled time
    before = datetime.now(UTC)

    # When normalizing it
    value = normalize_iso("yesterday-ish")

    # Then the result is the current time, in the same format
    after = datetime.now(UTC)
    assert value.endswith("Z")
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    assert before.replace(microsecond=before.microsecond // 1000 * 1000) <= parsed <= after


def test_epoch_milliseconds_become_iso_utc_with_milliseconds():
    # Given / When / Then: Batch reports startedAt/stoppedAt as epoch milliseconds
    assert iso_from_millis(1714566896123) == "2024-05-01T12:34:56.123Z"


def test_billed_seconds_add_up_every_batch_attempt():
    # Given a job Batch ran twice (a host was reclaimed after 10 minutes, then 50 minutes ran)
    detail = {
        "startedAt": 800_000,
        "stoppedAt": 3_800_000,
        "attempts": [{"startedAt": 100_000, "stoppedAt": 700_000}, {"startedAt": 800_000, "stoppedAt": 3_800_000}],
    }
    # Then both attempts are billed
    assert billed_seconds(detail) == 3600.0


def test_billed_seconds_fall_back_to_the_jobs_own_times_and_are_none_before_it_ran():
    assert billed_seconds({"startedAt": 1_000, "stoppedAt": 61_000}) == 60.0
    assert billed_seconds({"status": "RUNNABLE"}) is None
