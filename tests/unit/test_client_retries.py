"""The API client retries a POST /jobs whose Idempotency-Key is still in progress (409 IN_PROGRESS), honouring
Retry-After, for a bounded time; every other answer is returned as it came."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from gpupilot.client import ApiClient, ApiResponse, StillInProgress
from tests.unit.scripted_api import Answer, ScriptedApi, in_progress

JOB = {"name": "train", "image": "img", "command": ["true"]}
ACCEPTED = Answer(202, {"job_id": "job-1", "status": "SUBMITTED", "execution_arn": "arn", "warnings": []})
KEY = {"Idempotency-Key": "nightly-42"}


class FakeTime:
    """A clock that only moves when the client sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def client_for(api: ScriptedApi, fake: FakeTime, limit: float | None = None) -> ApiClient:
    return ApiClient(api.url, in_progress_limit_seconds=limit, sleep=fake.sleep, clock=fake.clock)


def test_a_submit_still_in_progress_is_retried_after_retry_after_and_returns_the_first_calls_job() -> None:
    # Given an API that answers 409 IN_PROGRESS twice (Retry-After 2, then none), then the job
    fake = FakeTime()
    with ScriptedApi(in_progress("2"), in_progress(None), ACCEPTED) as api:
        # When the client submits with an Idempotency-Key
        response = client_for(api, fake).request("POST", "/jobs", JOB, headers=KEY)

    # Then it waited as told (1 s when the API did not say) and returns the job
    assert (response.status, response.body["job_id"]) == (202, "job-1")
    assert fake.slept == [2.0, 1.0]
    # And it asked three times with the same key and body
    assert [(r.method, r.path, r.headers["Idempotency-Key"], r.body) for r in api.received] == [
        ("POST", "/jobs", "nightly-42", JOB)
    ] * 3


def test_retry_after_as_an_http_date_is_honoured() -> None:
    # Given a Retry-After given as a date 5 seconds ahead
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=5), usegmt=True)
    fake = FakeTime()
    with ScriptedApi(in_progress(later), ACCEPTED) as api:
        client_for(api, fake).request("POST", "/jobs", JOB, headers=KEY)

    # Then the client waited about that long
    assert len(fake.slept) == 1 and 3 <= fake.slept[0] <= 5


@pytest.mark.parametrize("retry_after", ["soon", "-3", "nan", ""])
def test_an_unreadable_retry_after_means_one_second(retry_after: str) -> None:
    response = ApiResponse(409, {"error": "IN_PROGRESS"}, {"retry-after": retry_after})
    assert response.retry_after_seconds() == 1.0


def test_a_submit_still_in_progress_after_the_limit_is_given_up_with_still_in_progress() -> None:
    # Given an API that never finishes the first call
    fake = FakeTime()
    # When / Then the client gives up once the limit (30 s by default) has passed
    with (
        ScriptedApi(in_progress("2")) as api,
        pytest.raises(StillInProgress, match="still in progress after 30 s") as gave_up,
    ):
        client_for(api, fake).request("POST", "/jobs", JOB, headers=KEY)

    # And it never slept past the limit
    assert sum(fake.slept) == pytest.approx(30)
    assert gave_up.value.response.status == 409
    assert len(api.received) == 16  # at 0, 2, 4, ..., 30 s


def test_a_key_reused_with_another_body_is_returned_at_once() -> None:
    # Given the API refuses the key: it was used with another body
    refusal = {"error": "IdempotencyKeyReused", "field": "Idempotency-Key", "message": "different body"}
    fake = FakeTime()
    with ScriptedApi(Answer(422, refusal)) as api:
        response = client_for(api, fake).request("POST", "/jobs", JOB, headers=KEY)

    # Then the 422 is the answer, without a retry
    assert (response.status, response.body["error"], len(api.received), fake.slept) == (
        422,
        "IdempotencyKeyReused",
        1,
        [],
    )


def test_another_409_is_not_retried() -> None:
    # Given a conflict that is not IN_PROGRESS (cancelling a finished job)
    fake = FakeTime()
    with ScriptedApi(Answer(409, {"error": "JobAlreadyFinished", "field": "job_id", "message": "done"})) as api:
        response = client_for(api, fake).request("DELETE", "/jobs/j1")

    # Then it is returned as it is
    assert (response.status, len(api.received), fake.slept) == (409, 1, [])


def test_the_answers_headers_are_kept_with_lower_case_names() -> None:
    fake = FakeTime()
    with ScriptedApi(Answer(200, {"jobs": []}, {"X-Request-Id": "r-1"})) as api:
        response = client_for(api, fake).request("GET", "/jobs")
    assert response.headers["x-request-id"] == "r-1"
