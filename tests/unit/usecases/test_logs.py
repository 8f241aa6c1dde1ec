"""GET /jobs/{id}/logs: an attempt's log stream, read a page at a time from where the last page ended."""

from __future__ import annotations

import pytest

from functions.shared.domain.core.errors import AttemptNotFound
from functions.shared.domain.fleet.batch import BatchJobEvent, BatchJobState
from functions.shared.domain.jobs.definitions import JOB_LOG_GROUP
from functions.shared.usecases.jobs.logs import job_logs
from functions.shared.usecases.jobs.track import record_batch_event
from tests.unit.usecases.conftest import JOB_ID, submitted

STREAM = "gpupilot/default/task-1"
AT = "2026-11-22T10:00:00.000Z"


def running(ports, stream: str = STREAM, attempt: int = 1) -> None:
    batch_job_id = ports.jobs.get_job(JOB_ID).attempts[attempt].batch_job_id
    detail = {"jobId": batch_job_id, "jobName": f"gpupilot-{JOB_ID}-a{attempt}", "status": "RUNNING",
              "container": {"logStreamName": stream}}  # fmt: skip
    record_batch_event(BatchJobEvent(at=AT, job=BatchJobState.from_batch(detail)), ports)


def test_the_lines_of_the_attempt_that_ran_are_read_from_batch_s_log_group(ports):
    # Given an attempt that runs and has printed two lines
    submitted(ports)
    running(ports)
    ports.logs.write(JOB_LOG_GROUP, STREAM, "hello", "world")

    # When its logs are read
    page = job_logs(JOB_ID, None, None, ports)

    # Then both lines come, oldest first, from that stream
    assert [event.message for event in page.events] == ["hello", "world"]
    assert (page.attempt, page.log_group, page.log_stream) == (1, JOB_LOG_GROUP, STREAM)


def test_reading_on_with_the_next_token_gives_only_the_lines_written_since(ports):
    # Given a page already read
    submitted(ports)
    running(ports)
    ports.logs.write(JOB_LOG_GROUP, STREAM, "first")
    first = job_logs(JOB_ID, None, None, ports)

    # When a line is written and the logs are read on from the page's token
    ports.logs.write(JOB_LOG_GROUP, STREAM, "second")
    later = job_logs(JOB_ID, None, first.next_token, ports)

    # Then only the new line comes
    assert [event.message for event in later.events] == ["second"]


def test_an_attempt_that_has_not_run_has_no_stream_and_no_lines_yet(ports):
    # Given an attempt Batch has not started (no stream named yet)
    submitted(ports)

    # When its logs are read
    page = job_logs(JOB_ID, None, None, ports)

    # Then there is no stream and nothing is read from CloudWatch Logs
    assert page.log_stream is None and page.events == []
    assert ports.logs.reads == []


def test_an_attempt_the_job_does_not_have_is_refused_naming_the_attempts_it_has(ports):
    # Given a job with one attempt
    submitted(ports)

    # When attempt 3 is asked for
    with pytest.raises(AttemptNotFound) as refused:
        job_logs(JOB_ID, 3, None, ports)

    # Then the refusal says which attempts there are
    assert "1 to 1" in str(refused.value)


def test_an_attempt_in_a_capacity_region_is_read_from_that_regions_logs():
    from tests.fakes import fake_ports
    from tests.fakes.ports import with_regions

    # Given a job whose attempt runs in us-west-2 and printed a line there
    ports = with_regions(fake_ports(), {"us-west-2": {}})
    submitted(ports, regions=["us-west-2"])
    assert ports.jobs.get_job(JOB_ID).attempts[1].region == "us-west-2"
    running(ports)
    ports.in_region("us-west-2").logs.write(JOB_LOG_GROUP, STREAM, "from us-west-2")

    # When its logs are read / Then the line comes from us-west-2's CloudWatch Logs, none is asked of home's
    page = job_logs(JOB_ID, None, None, ports)
    assert [event.message for event in page.events] == ["from us-west-2"]
    assert ports.logs.reads == []
