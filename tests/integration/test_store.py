"""The job store against moto DynamoDB: every racing write is conditional."""

from __future__ import annotations

import boto3
import pytest

from functions.shared.models import JobStatus
from functions.shared.store import InvalidPageToken, JobAlreadyExists, JobNotFound, JobStore
from gpupilot.localcloud.deploy import Deployment

REQUEST = {"name": "train", "image": "img", "command": ["python", "train.py"]}


@pytest.fixture
def store(deployment: Deployment) -> JobStore:
    return JobStore(boto3.client("dynamodb"), deployment.table_name)


def test_creating_a_job_twice_with_the_same_id_is_refused_and_keeps_the_first(store: JobStore) -> None:
    # Given a job
    store.create_job("job00000001", "first", REQUEST)
    # When the same id is written again
    with pytest.raises(JobAlreadyExists):
        store.create_job("job00000001", "second", REQUEST)
    # Then the first one is intact
    assert store.get_job("job00000001")["name"] == "first"


def test_reading_an_unknown_job_raises_job_not_found(store: JobStore) -> None:
    with pytest.raises(JobNotFound):
        store.get_job("nope0000000")


def test_status_only_moves_forward_so_a_late_event_cannot_rewind_it(store: JobStore) -> None:
    # Given a job already RUNNING on attempt 1
    store.create_job("job00000002", "train", REQUEST)
    assert store.advance("job00000002", JobStatus.RUNNING, attempt=1)
    # When a late RUNNABLE for the same attempt arrives
    moved = store.advance("job00000002", JobStatus.RUNNABLE, attempt=1)
    # Then it is ignored, and the timeline holds each status once
    record = store.get_job("job00000002")
    assert not moved
    assert record["status"] == "RUNNING"
    assert [e["status"] for e in record["timeline"]] == ["SUBMITTED", "RUNNING"]


def test_a_later_attempt_may_go_back_to_runnable(store: JobStore) -> None:
    # Given attempt 1 got to RUNNABLE and the workflow fell back
    store.create_job("job00000003", "train", REQUEST)
    store.advance("job00000003", JobStatus.RUNNABLE, attempt=1)
    # When attempt 2 is provisioned
    moved = store.advance("job00000003", JobStatus.PROVISIONING, attempt=2)
    # Then the job shows it
    assert moved
    assert store.get_job("job00000003")["status"] == "PROVISIONING"


def test_a_finished_job_keeps_its_outcome(store: JobStore) -> None:
    # Given a cancelled job
    store.create_job("job00000004", "train", REQUEST)
    assert store.finish("job00000004", JobStatus.CANCELLED)
    # When the workflow later tries to record success
    recorded = store.finish("job00000004", JobStatus.SUCCEEDED, fields={"cost": {"usd": 1.0}})
    # Then the cancel stands
    assert not recorded
    assert store.get_job("job00000004")["status"] == "CANCELLED"


def test_an_attempt_is_created_once_and_a_retry_gets_the_existing_one(store: JobStore) -> None:
    store.create_job("job00000005", "train", REQUEST)
    first = store.put_attempt("job00000005", 1, {"instance_type": "g5.xlarge", "batch_job_id": "b-1"})
    again = store.put_attempt("job00000005", 1, {"instance_type": "g6.xlarge"})
    assert first["batch_job_id"] == "b-1"
    assert again["instance_type"] == "g5.xlarge"


def test_out_of_order_batch_events_do_not_move_an_attempt_backwards(store: JobStore) -> None:
    # Given an attempt that Batch reported SUCCEEDED
    store.create_job("job00000006", "train", REQUEST)
    store.put_attempt("job00000006", 1, {"instance_type": "g5.xlarge"})
    assert store.update_attempt("job00000006", 1, {"batch_status": "SUCCEEDED"}) is not None
    # When the RUNNING event arrives late
    stale = store.update_attempt("job00000006", 1, {"batch_status": "RUNNING"})
    # Then it is dropped
    assert stale is None
    assert store.get_job("job00000006")["attempts"]["1"]["batch_status"] == "SUCCEEDED"


def test_listing_pages_newest_first_and_filters_by_status(store: JobStore) -> None:
    for index in range(5):
        store.create_job(f"job0000010{index}", f"train-{index}", REQUEST)
    store.finish("job00000100", JobStatus.FAILED)
    page, token = store.list_jobs(None, 2, None)
    rest, _ = store.list_jobs(None, 10, token)
    failed, _ = store.list_jobs("FAILED", 10, None)
    assert len(page) == 2 and token
    assert {j["job_id"] for j in page} | {j["job_id"] for j in rest} == {f"job0000010{i}" for i in range(5)}
    assert [j["job_id"] for j in failed] == ["job00000100"]


def test_a_page_token_we_did_not_issue_is_refused(store: JobStore) -> None:
    with pytest.raises(InvalidPageToken):
        store.list_jobs(None, 10, "not-a-token")


def test_unavailable_offerings_are_remembered_until_their_ttl(store: JobStore) -> None:
    store.remember_unavailable("on-demand:g6.xlarge:us-east-1a", "INSUFFICIENT_CAPACITY", ttl_seconds=600)
    store.remember_unavailable("on-demand:g5.xlarge:us-east-1a", "INSUFFICIENT_CAPACITY", ttl_seconds=-1)
    assert store.unavailable_offerings() == {"on-demand:g6.xlarge:us-east-1a"}
