"""The job store's contract, held by the DynamoDB adapter (on moto) and by the in-memory fake alike:
every racing write is conditional. The use-case tests trust the fake because it passes these too."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from functions.shared.adapters import job_batches, job_lists
from functions.shared.adapters.job_lists import UNSHARDED_LIST_PARTITION, job_key, job_shard
from functions.shared.adapters.job_store import DynamoJobStore
from functions.shared.adapters.table_store import DynamoOfferingMemory
from functions.shared.constants import GSI1_PK, JOB_INDEX_SHARDS
from functions.shared.domain.capacity.unavailable import remembered
from functions.shared.domain.core.clock import now_iso, seconds_between
from functions.shared.domain.core.errors import InvalidPageToken, JobAlreadyExists, JobNotFound
from functions.shared.domain.core.vocabulary import BatchStatus, CapacityType, DiagnosisCategory, JobStatus, WaitPhase
from functions.shared.domain.jobs.records import AttemptRecord, Wait
from functions.shared.domain.jobs.retries import BatchRetry
from functions.shared.domain.jobs.writes import AttemptUpdate, JobFinish, WaitClear
from functions.shared.domain.requests.job_request import JobRequest
from functions.shared.ports.jobs import JobStore
from gpupilot.localcloud.deploy import Deployment
from tests.fakes import FakeJobStore, FakeOfferingMemory

REQUEST = JobRequest.model_validate({"name": "train", "image": "img", "command": ["python", "train.py"]})


def attempt(instance_type: str = "g5.xlarge", **fields: Any) -> AttemptRecord:
    return AttemptRecord(instance_type=instance_type, capacity=CapacityType.ON_DEMAND, job_queue="q", **fields)


@pytest.fixture(params=["dynamodb", "fake"])
def store(request: pytest.FixtureRequest) -> Iterator[JobStore]:
    if request.param == "fake":
        yield FakeJobStore()
    else:
        deployment = request.getfixturevalue("deployment")
        yield DynamoJobStore(deployment.table_name)


def test_creating_a_job_twice_with_the_same_id_is_refused_and_keeps_the_first(store: JobStore) -> None:
    # Given a job
    store.create_job("job00000001", REQUEST)
    # When the same id is written again
    with pytest.raises(JobAlreadyExists):
        store.create_job("job00000001", REQUEST.model_copy(update={"name": "second"}))
    # Then the first one is intact
    assert store.get_job("job00000001").name == "train"


def test_reading_an_unknown_job_raises_job_not_found(store: JobStore) -> None:
    with pytest.raises(JobNotFound):
        store.get_job("nope0000000")


def test_status_only_moves_forward_so_a_late_event_cannot_rewind_it(store: JobStore) -> None:
    # Given a job already RUNNING on attempt 1
    store.create_job("job00000002", REQUEST)
    assert store.advance("job00000002", JobStatus.RUNNING, attempt=1)
    # When a late RUNNABLE for the same attempt arrives
    moved = store.advance("job00000002", JobStatus.RUNNABLE, attempt=1)
    # Then it is ignored, and the timeline holds each status once
    record = store.get_job("job00000002")
    assert not moved
    assert record.status == JobStatus.RUNNING
    assert [e.status for e in record.timeline] == [JobStatus.SUBMITTED, JobStatus.RUNNING]


def test_a_later_attempt_may_go_back_to_runnable(store: JobStore) -> None:
    # Given attempt 1 got to RUNNABLE and the workflow fell back
    store.create_job("job00000003", REQUEST)
    store.advance("job00000003", JobStatus.RUNNABLE, attempt=1)
    # When attempt 2 is provisioned / Then the job shows it
    assert store.advance("job00000003", JobStatus.PROVISIONING, attempt=2, fields={"instance_type": "g6.xlarge"})
    record = store.get_job("job00000003")
    assert (record.status, record.instance_type) == (JobStatus.PROVISIONING, "g6.xlarge")


def test_a_finished_job_keeps_its_outcome(store: JobStore) -> None:
    # Given a cancelled job
    store.create_job("job00000004", REQUEST)
    assert store.finish("job00000004", JobStatus.CANCELLED)
    # When the workflow later tries to record success
    recorded = store.finish("job00000004", JobStatus.SUCCEEDED, fields={"error": "late"})
    # Then the cancel stands
    assert not recorded
    assert store.get_job("job00000004").status == JobStatus.CANCELLED


def test_an_attempt_is_created_once_and_a_retry_gets_the_existing_one(store: JobStore) -> None:
    store.create_job("job00000005", REQUEST)
    first = store.put_attempt("job00000005", 1, attempt("g5.xlarge", batch_job_id="b-1"))
    again = store.put_attempt("job00000005", 1, attempt("g6.xlarge"))
    assert first.batch_job_id == "b-1"
    assert again.instance_type == "g5.xlarge"


def test_out_of_order_batch_events_do_not_move_an_attempt_backwards(store: JobStore) -> None:
    # Given an attempt that Batch reported SUCCEEDED
    store.create_job("job00000006", REQUEST)
    store.put_attempt("job00000006", 1, attempt())
    assert store.update_attempt("job00000006", 1, {"batch_status": BatchStatus.SUCCEEDED}) is not None
    # When the RUNNING event arrives late / Then it is dropped
    assert store.update_attempt("job00000006", 1, {"batch_status": BatchStatus.RUNNING}) is None
    assert store.get_job("job00000006").attempts[1].batch_status == BatchStatus.SUCCEEDED


def test_a_batch_event_delivered_twice_is_applied_once_and_keeps_batchs_later_words(store: JobStore) -> None:
    # Given an attempt whose RUNNABLE event was recorded, and Batch's later reason for the job still RUNNABLE
    store.create_job("job000000dd", REQUEST)
    store.put_attempt("job000000dd", 1, attempt())
    first = {"batch_status": BatchStatus.RUNNABLE, "status_reason": "waiting for an instance"}
    assert store.update_attempt("job000000dd", 1, first) is not None
    assert store.note_reason("job000000dd", 1, BatchStatus.RUNNABLE, "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY")
    # When the same event is delivered again (EventBridge delivers at least once; the local cloud's faults too)
    # Then the copy is refused (its handler takes the stale path), and the later words stay
    assert store.update_attempt("job000000dd", 1, first) is None
    assert store.get_job("job000000dd").attempts[1].status_reason == "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"


def test_batchs_later_words_return_the_record_as_written_with_a_wait_parked_since_the_read(store: JobStore) -> None:
    # Given a RUNNABLE attempt read by job_events, then a start wait parked by the workflow
    store.create_job("job000000de", REQUEST)
    store.put_attempt("job000000de", 1, attempt())
    store.update_attempt("job000000de", 1, {"batch_status": BatchStatus.RUNNABLE})
    read_before = store.get_job("job000000de")
    store.store_wait("job000000de", WaitPhase.START, Wait(attempt=1, token="tok", since=now_iso()))
    # When Batch's words are noted
    noted = store.note_reason("job000000de", 1, BatchStatus.RUNNABLE, "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY")
    # Then the record returned holds both the words and the wait (the one read before had neither)
    assert read_before.waits == {}
    assert noted is not None and set(noted.waits) == {WaitPhase.START}
    assert noted.attempts[1].status_reason == "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY"
    # And once the attempt moved on, nothing is written and nothing returned
    store.update_attempt("job000000de", 1, {"batch_status": BatchStatus.RUNNING})
    assert store.note_reason("job000000de", 1, BatchStatus.RUNNABLE, "later words") is None


def test_a_field_set_only_if_missing_keeps_the_first_value(store: JobStore) -> None:
    store.create_job("job00000007", REQUEST)
    store.put_attempt("job00000007", 1, attempt())
    store.update_attempt("job00000007", 1, {}, if_missing={"batch_job_id": "first"})
    store.update_attempt("job00000007", 1, {}, if_missing={"batch_job_id": "second"})
    assert store.get_job("job00000007").attempts[1].batch_job_id == "first"


def test_a_reason_learnt_later_explains_its_timeline_entry_in_the_same_write(store: JobStore) -> None:
    # Given a job RUNNABLE on attempt 1, its entry without a reason yet
    store.create_job("job00000009", REQUEST)
    store.put_attempt("job00000009", 1, attempt())
    store.update_attempt("job00000009", 1, {"batch_status": BatchStatus.RUNNABLE})
    store.advance("job00000009", JobStatus.RUNNABLE, attempt=1)
    entry = store.get_job("job00000009").entry_for(JobStatus.RUNNABLE, 1)
    assert entry == 1
    # When Batch's words, then a diagnosis, explain it
    assert store.note_reason("job00000009", 1, BatchStatus.RUNNABLE, "CAPACITY:INSUFFICIENT", entry)
    batch_words = store.get_job("job00000009").timeline[entry].reason
    store.update_attempt(
        "job00000009", 1, {"status_reason": "x"}, timeline_reason=(entry, "INSUFFICIENT_CAPACITY", now_iso())
    )
    # Then the entry carries each in turn, and the timeline keeps its length
    record = store.get_job("job00000009")
    assert batch_words == "CAPACITY:INSUFFICIENT"
    assert [(e.status, e.reason) for e in record.timeline] == [
        (JobStatus.SUBMITTED, None),
        (JobStatus.RUNNABLE, "INSUFFICIENT_CAPACITY"),
    ]


def test_an_attempt_s_batch_retries_only_grow_whatever_order_their_events_come_in(store: JobStore) -> None:
    # Given an attempt, and what two of Batch's events say of its retries: one, then two
    store.create_job("job0000000r", REQUEST)
    store.put_attempt("job0000000r", 1, attempt())
    one = [BatchRetry(batch_attempt=1, host="i-0bad", reason="Task failed to start")]
    two = [*one, BatchRetry(batch_attempt=2, host="i-0bad2", reason="Task failed to start")]
    # When the later event's are written, then the earlier event's, then the later's again
    written = [store.note_retries("job0000000r", 1, retries) for retries in (two, one, two)]
    # Then only the first write applied: an older event never takes a retry away, a repeat adds none
    assert written == [True, False, False]
    assert store.get_job("job0000000r").attempts[1].batch_retries == two


def test_a_spent_token_is_cleared_only_if_no_newer_wait_replaced_it(store: JobStore) -> None:
    store.create_job("job00000008", REQUEST)
    store.store_wait("job00000008", WaitPhase.START, Wait(attempt=1, token="old"))
    store.store_wait("job00000008", WaitPhase.START, Wait(attempt=2, token="new"))
    store.clear_wait("job00000008", WaitPhase.START, "old")
    assert store.get_job("job00000008").waits[WaitPhase.START].token == "new"
    store.clear_wait("job00000008", WaitPhase.START, "new")
    assert store.get_job("job00000008").waits == {}


# -- many jobs at once (the sweep) -------------------------------------------------------------------
def test_many_writes_each_apply_or_fail_their_own_condition(store: JobStore) -> None:
    # Given an attempt RUNNING, an attempt SUCCEEDED already, a live job and a wait replaced by a newer one
    for job_id in ("many00000001", "many00000002", "many00000003", "many00000004"):
        store.create_job(job_id, REQUEST)
    for job_id, status in (("many00000001", BatchStatus.RUNNING), ("many00000002", BatchStatus.SUCCEEDED)):
        store.put_attempt(job_id, 1, attempt())
        store.update_attempt(job_id, 1, {"batch_status": status})
    store.store_wait("many00000004", WaitPhase.START, Wait(attempt=2, token="new"))

    # When one call writes an end to each attempt, a job's end, and forgets the replaced token
    applied = store.write_many(
        [
            AttemptUpdate("many00000001", 1, {"batch_status": BatchStatus.SUCCEEDED}, if_missing={"exit_code": 0}),
            AttemptUpdate("many00000002", 1, {"batch_status": BatchStatus.FAILED}),
            JobFinish("many00000003", JobStatus.FAILED, fields={"error": "gone"}, reason="gone"),
            WaitClear("many00000004", WaitPhase.START, "old"),
        ]
    )

    # Then each write applied or not on its own condition, as its single form would have
    assert applied == [True, False, True, False]
    records = store.get_jobs(["many00000001", "many00000002", "many00000003", "many00000004", "unknown00001"])
    assert set(records) == {"many00000001", "many00000002", "many00000003", "many00000004"}
    assert (records["many00000001"].attempts[1].batch_status, records["many00000001"].attempts[1].exit_code) == (
        BatchStatus.SUCCEEDED,
        0,
    )
    assert records["many00000002"].attempts[1].batch_status == BatchStatus.SUCCEEDED
    assert (records["many00000003"].status, records["many00000003"].error) == (JobStatus.FAILED, "gone")
    assert records["many00000004"].waits[WaitPhase.START].token == "new"
    assert [job.job_id for job in store.active_jobs()].count("many00000003") == 0


def test_writes_to_one_job_among_many_apply_in_their_order(store: JobStore) -> None:
    # Given a job RUNNING with its finish wait parked
    store.create_job("order0000001", REQUEST)
    store.put_attempt("order0000001", 1, attempt())
    store.update_attempt("order0000001", 1, {"batch_status": BatchStatus.RUNNING})
    store.store_wait("order0000001", WaitPhase.FINISH, Wait(attempt=1, token="t"))

    # When the end, its price and the spent token are written together, with another job's write between
    store.create_job("order0000002", REQUEST)
    applied = store.write_many(
        [
            AttemptUpdate("order0000001", 1, {"batch_status": BatchStatus.SUCCEEDED}),
            JobFinish("order0000002", JobStatus.CANCELLED),
            AttemptUpdate("order0000001", 1, {"batch_status": BatchStatus.FAILED}),
            WaitClear("order0000001", WaitPhase.FINISH, "t"),
        ]
    )

    # Then the second end, written after the first, is stale, and the token is gone
    assert applied == [True, True, False, True]
    record = store.get_job("order0000001")
    assert (record.attempts[1].batch_status, record.waits) == (BatchStatus.SUCCEEDED, {})


def test_more_writes_than_a_transaction_holds_are_all_written(deployment: Deployment, monkeypatch) -> None:
    # Given a DynamoDB store whose transactions hold two writes, and five live jobs, one of them finished already
    monkeypatch.setattr(job_batches, "TRANSACT_ITEMS", 2)
    store = DynamoJobStore(deployment.table_name)
    jobs = [f"split000000{n}" for n in range(5)]
    for job_id in jobs:
        store.create_job(job_id, REQUEST)
    store.finish(jobs[2], JobStatus.SUCCEEDED)

    # When all five are failed in one write_many
    applied = store.write_many([JobFinish(job_id, JobStatus.FAILED) for job_id in jobs])

    # Then each is written once, and the finished one keeps its outcome
    assert applied == [True, True, False, True, True]
    assert [store.get_job(job_id).status for job_id in jobs] == [JobStatus.FAILED] * 2 + [JobStatus.SUCCEEDED] + [
        JobStatus.FAILED
    ] * 2


def test_the_sweep_reads_an_unfinished_job_as_its_index_projects_it(store: JobStore) -> None:
    # Given a job that may wait 42 minutes, on its first attempt, parked on its start
    store.create_job("view00000001", REQUEST.model_copy(update={"stuck_after_minutes": 42.0}))
    store.put_attempt("view00000001", 1, attempt(batch_job_id="b-42"))
    store.set_execution_arn("view00000001", "arn:aws:states:us-east-1:123456789012:execution:GpuJob:view00000001")
    store.store_wait("view00000001", WaitPhase.START, Wait(attempt=1, token="t"))

    # When the sweep reads the unfinished jobs
    (job,) = [job for job in store.active_jobs() if job.job_id == "view00000001"]

    # Then it sees what it needs of the job: how long it may wait, its attempt, its wait and its execution
    assert job.stuck_after_minutes == 42.0
    assert (job.attempts[1].batch_job_id, job.waits[WaitPhase.START].token) == ("b-42", "t")
    assert job.execution_arn and job.execution_arn.endswith(":view00000001")


def test_listing_pages_newest_first_and_filters_by_status(store: JobStore) -> None:
    for index in range(5):
        store.create_job(f"job0000010{index}", REQUEST)
    store.finish("job00000100", JobStatus.FAILED)
    page, token = store.list_jobs(None, 2, None)
    rest, _ = store.list_jobs(None, 10, token)
    failed, _ = store.list_jobs(JobStatus.FAILED, 10, None)
    assert len(page) == 2 and token
    assert {j.job_id for j in page} | {j.job_id for j in rest} == {f"job0000010{i}" for i in range(5)}
    assert [j.job_id for j in failed] == ["job00000100"]


def every_page(store: JobStore, status: JobStatus | None, limit: int) -> list[list[str]]:
    """The job ids of each page, following next_token to the end."""
    pages, token = [], None
    while True:
        jobs, token = store.list_jobs(status, limit, token)
        pages.append([job.job_id for job in jobs])
        if token is None:
            return pages
        assert len(pages) < 100, "paging does not end"


def newest_first(store: JobStore, job_ids: list[str]) -> list[str]:
    records = [store.get_job(job_id) for job_id in job_ids]
    return [r.job_id for r in sorted(records, key=lambda r: (r.created_at, r.job_id), reverse=True)]


def test_paging_through_more_jobs_than_a_page_gives_each_once_newest_first(store: JobStore) -> None:
    # Given more jobs than a page over the list's shards, most on one (a page reads it more than once)
    candidates = [f"page{index:07d}" for index in range(200)]
    crowded = [job_id for job_id in candidates if job_shard(job_id) == 0][:12]
    job_ids = crowded + [job_id for job_id in candidates if job_shard(job_id) != 0][:11]
    for job_id in job_ids:
        store.create_job(job_id, REQUEST)
    # When every page is read, five at a time
    pages = every_page(store, None, 5)
    # Then the pages hold every job once, newest first, each page full but the last
    assert [job for page in pages for job in page] == newest_first(store, job_ids)
    assert [len(page) for page in pages[:4]] == [5, 5, 5, 5] and len(pages[4]) <= 3


def test_paging_a_status_gives_each_job_of_that_status_once_newest_first(store: JobStore) -> None:
    # Given a third of many jobs FAILED
    job_ids = [f"stat{index:07d}" for index in range(21)]
    for job_id in job_ids:
        store.create_job(job_id, REQUEST)
    failed = job_ids[::3]
    for job_id in failed:
        store.finish(job_id, JobStatus.FAILED)
    # When the FAILED jobs are paged two at a time
    pages = every_page(store, JobStatus.FAILED, 2)
    # Then each comes once, in order, and no other job does
    assert [job for page in pages for job in page] == newest_first(store, failed)


def test_a_job_submitted_while_paging_neither_repeats_nor_hides_another(store: JobStore) -> None:
    # Given the first page of the list
    job_ids = [f"midp{index:07d}" for index in range(9)]
    for job_id in job_ids:
        store.create_job(job_id, REQUEST)
    first, token = store.list_jobs(None, 4, None)
    # When a job is submitted before the next page is read
    store.create_job("midpnewest1", REQUEST)
    rest = [job for page in every_page_from(store, token, 4) for job in page]
    # Then the remaining pages hold exactly the jobs older than the first page's
    assert [job.job_id for job in first] + rest == newest_first(store, job_ids)


def every_page_from(store: JobStore, token: str | None, limit: int) -> list[list[str]]:
    pages = []
    while token is not None:
        jobs, token = store.list_jobs(None, limit, token)
        pages.append([job.job_id for job in jobs])
    return pages


def test_a_page_token_we_did_not_issue_is_refused(store: JobStore) -> None:
    with pytest.raises(InvalidPageToken):
        store.list_jobs(None, 10, "not-a-token")


def test_the_job_list_spreads_jobs_over_its_shards_so_no_partition_takes_every_submit(
    deployment: Deployment,
) -> None:
    # Given a burst of submits
    store = DynamoJobStore(deployment.table_name)
    for index in range(16):
        store.create_job(f"hot{index:08d}", REQUEST)
    # When their list index partitions are read back
    table = boto3.client("dynamodb", region_name="us-east-1")
    partitions = {
        table.get_item(TableName=deployment.table_name, Key=job_key(f"hot{index:08d}"))["Item"][GSI1_PK]["S"]
        for index in range(16)
    }
    # Then they are the shards the active index uses too, more than one of them
    assert len(partitions) > 1 and partitions <= {f"JOBS#{shard}" for shard in range(JOB_INDEX_SHARDS)}


def test_jobs_listed_before_the_list_was_sharded_are_still_listed_and_counted(deployment: Deployment) -> None:
    # Given jobs written to the one partition the list had before it was sharded, among newer ones
    store = DynamoJobStore(deployment.table_name)
    table = boto3.client("dynamodb", region_name="us-east-1")
    job_ids = [f"old{index:08d}" for index in range(7)]
    for job_id in job_ids:
        store.create_job(job_id, REQUEST)
    for job_id in job_ids[:3]:
        table.update_item(
            TableName=deployment.table_name,
            Key=job_key(job_id),
            UpdateExpression="SET #gpk = :jobs",
            ExpressionAttributeNames={"#gpk": GSI1_PK},
            ExpressionAttributeValues={":jobs": {"S": UNSHARDED_LIST_PARTITION}},
        )
    # When the list is paged, and costs read the days they were created
    pages = every_page(store, None, 2)
    today = store.get_job(job_ids[0]).created_at[:10]
    counted = store.jobs_created_between(today, today)
    # Then they are listed in their place and counted, once each
    assert [job for page in pages for job in page] == newest_first(store, job_ids)
    assert [job.job_id for job in counted] == newest_first(store, job_ids)[::-1]


def test_a_page_cut_short_by_its_reads_resumes_where_they_stopped(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a few FAILED jobs among many others, and pages allowed few reads
    store = DynamoJobStore(deployment.table_name)
    job_ids = [f"rare{index:08d}" for index in range(60)]
    for job_id in job_ids:
        store.create_job(job_id, REQUEST)
    failed = job_ids[4::11]
    for job_id in failed:
        store.finish(job_id, JobStatus.FAILED)
    monkeypatch.setattr(job_lists, "MAX_LIST_READS", len(job_lists.list_partitions()) + 2)
    # When the FAILED jobs are paged
    pages = every_page(store, JobStatus.FAILED, 3)
    # Then pages end early with a token, and the token resumes without losing or repeating a job
    assert len(pages) > 1
    assert [job for page in pages for job in page] == newest_first(store, failed)


@pytest.mark.parametrize("kind", ["dynamodb", "fake"])
def test_unavailable_offerings_are_remembered_until_their_ttl(kind: str, request: pytest.FixtureRequest) -> None:
    memory = (
        FakeOfferingMemory()
        if kind == "fake"
        else DynamoOfferingMemory(request.getfixturevalue("deployment").table_name)
    )
    at = now_iso()
    cause = "AWS Batch said CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY at 12:03 UTC"
    kept = remembered(DiagnosisCategory.INSUFFICIENT_CAPACITY, cause, at, ttl_seconds=600)
    memory.remember_unavailable("on-demand:g6.xlarge:us-east-1a", kept)
    memory.remember_unavailable(
        "on-demand:g5.xlarge:us-east-1a", remembered(DiagnosisCategory.INSUFFICIENT_CAPACITY, cause, at, -1)
    )
    found = memory.unavailable_offerings()
    assert set(found) == {"on-demand:g6.xlarge:us-east-1a"}
    # Each with its category, cause and time; its expiry to the second (DynamoDB's TTL is epoch seconds)
    memory_of = found["on-demand:g6.xlarge:us-east-1a"]
    assert (memory_of.category, memory_of.cause, memory_of.at) == (kept.category, cause, at)
    assert abs(seconds_between(kept.expires_at, memory_of.expires_at)) < 1
