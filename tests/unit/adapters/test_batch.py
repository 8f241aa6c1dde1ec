"""The Batch adapter's lookups read every page Batch gives, as Batch gives them (botocore's Stubber plays Batch)."""

from __future__ import annotations

import boto3
from botocore.stub import Stubber

from functions.shared.adapters.batch import LIST_JOBS_PAGE, BatchJobsAdapter

QUEUE = "gpupilot-od-x8664-g5-xlarge-1a2b3c4d"
NAME = "gpupilot-0123456789abcdef0123-a1"


def summary(job_id: str, name: str) -> dict[str, object]:
    return {"jobId": job_id, "jobName": name, "jobArn": f"arn:aws:batch:us-east-1:123456789012:job/{job_id}",
            "status": "RUNNABLE", "createdAt": 1_800_000_000_000}  # fmt: skip


def listing(token: str | None = None) -> dict[str, object]:
    """The ListJobs request find_job makes (by name, every status), from `token`."""
    request: dict[str, object] = {
        "jobQueue": QUEUE,
        "filters": [{"name": "JOB_NAME", "values": [NAME]}],
        "maxResults": LIST_JOBS_PAGE,
    }
    return request | ({"nextToken": token} if token else {})


def test_the_job_found_by_name_may_be_on_a_later_page_after_an_empty_one_and_lookalikes():
    # Given Batch answering the name filter with an empty page and a token, then a job whose name matches only
    # case-insensitively (as the JOB_NAME filter does), then ours
    batch = boto3.client("batch", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(batch) as stub:
        stub.add_response("list_jobs", {"jobSummaryList": [], "nextToken": "t1"}, listing())
        stub.add_response("list_jobs", {"jobSummaryList": [summary("other", NAME.upper())], "nextToken": "t2"},
                          listing("t1"))  # fmt: skip
        stub.add_response("list_jobs", {"jobSummaryList": [summary("ours", NAME)]}, listing("t2"))

        # When the retried submit looks for its Batch job
        found = BatchJobsAdapter(batch).find_job(QUEUE, NAME)

        # Then it read every page and found its own job
        stub.assert_no_pending_responses()
    assert found is not None
    assert (found.job_id, found.job_name, found.job_queue) == ("ours", NAME, QUEUE)


def test_no_job_of_that_name_on_any_page_is_none():
    batch = boto3.client("batch", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(batch) as stub:
        stub.add_response("list_jobs", {"jobSummaryList": [], "nextToken": "t1"}, listing())
        stub.add_response("list_jobs", {"jobSummaryList": []}, listing("t1"))
        assert BatchJobsAdapter(batch).find_job(QUEUE, NAME) is None
        stub.assert_no_pending_responses()
