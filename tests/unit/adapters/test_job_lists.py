"""The job store's read of unfinished jobs while DynamoDB fills the index that serves it (botocore's Stubber plays
DynamoDB, which refuses reads of an index it is still backfilling)."""

from __future__ import annotations

import boto3
from botocore.stub import Stubber

from functions.shared import constants as c
from functions.shared.adapters.job_lists import JobLists

TABLE = "gpupilot-jobs"
BACKFILLING = "Cannot read from backfilling global secondary index: " + c.GSI2_NAME


def index_scan(index: str) -> dict[str, object]:
    return {"TableName": TABLE, "IndexName": index}


def whole_record(job_id: str, stuck_after: str) -> dict[str, object]:
    """An unfinished job's item as the predecessor index (every attribute) gives it."""
    return {
        "pk": {"S": f"JOB#{job_id}"},
        "sk": {"S": "JOB"},
        "job_id": {"S": job_id},
        "name": {"S": "train"},
        "request": {"M": {"name": {"S": "train"}, "stuck_after_minutes": {"N": stuck_after}}},
        "attempts": {"M": {}},
        "waits": {"M": {}},
    }


def test_while_the_sweeps_index_backfills_its_predecessor_serves_the_same_jobs():
    # Given DynamoDB refusing the new index (just deployed, still backfilling) and its predecessor holding a job
    dynamodb = boto3.client("dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    with Stubber(dynamodb) as stub:
        stub.add_client_error("scan", "ValidationException", BACKFILLING, 400, expected_params=index_scan(c.GSI2_NAME))
        stub.add_response("scan", {"Items": [whole_record("job1", "42")]}, index_scan(c.GSI2_LEGACY_NAME))

        # When the sweep reads the unfinished jobs
        jobs = JobLists(TABLE, dynamodb).active_jobs()

        # Then it reads them all from the predecessor, its request's stuck_after included
        stub.assert_no_pending_responses()
    assert [(job.job_id, job.stuck_after_minutes) for job in jobs] == [("job1", 42.0)]
