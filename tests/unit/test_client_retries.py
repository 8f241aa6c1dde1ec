"""The API client retries a POST /jobs whose Idempotency-Key is still in progress (409 IN_PROGRESS), honouring
Retry-After, for a bounded time; it retries transient failures (5xx, 429, a reset connection) of the requests that
are safe to repeat (reads, /plan, a keyed POST /jobs) with bounded exponential backoff; every other answer is
returned as it came."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from urllib3.exceptions import MaxRetryError

from gpupilot.cli.client import ApiClient, ApiResponse, ApiUnreachable, StillInProgress
from gpupilot.cli.retries import BACKOFF_MAX, TRANSIENT_RETRIES
from tests.unit.scripted_api import RESET, Answer, ScriptedApi, in_progress

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
    # Transient failures are retried at once here (no backoff): the policy's waits have a test of their own.
    return ApiClient(api.url, in_progress_limit_seconds=limit, sleep=fake.sleep, clock=fake.clock, backoff_factor=0)


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


# -- transient failures: 5xx, 429, a reset connection ------------------------------------------------------------
FAILED = Answer(500, {"error": "InternalError", "message": "Lambda.ServiceException"})
JOB_STATE = Answer(200, {"job_id": "job-1", "status": "RUNNING"})


@pytest.mark.parametrize(
    "transient",
    [
        FAILED,
        Answer(502, {"message": "Internal server error"}),
        Answer(503, {"message": "Service Unavailable"}, {"Retry-After": "0"}),
        Answer(504, {"message": "Endpoint request timed out"}),
        Answer(429, {"message": "Too Many Requests"}, {"Retry-After": "0"}),
        RESET,
    ],
)
def test_a_read_that_fails_transiently_is_retried_until_it_is_answered(transient: Answer) -> None:
    # Given an API that fails twice, then answers
    with ScriptedApi(transient, transient, JOB_STATE) as api:
        # When the client polls a job
        response = client_for(api, FakeTime()).request("GET", "/jobs/job-1")

    # Then it got the answer, on the third try
    assert (response.status, response.body["status"], len(api.received)) == (200, "RUNNING", 3)


def test_a_read_that_keeps_failing_is_given_up_after_a_bounded_number_of_retries() -> None:
    with ScriptedApi(FAILED) as api:
        response = client_for(api, FakeTime()).request("GET", "/jobs/job-1")
    assert (response.status, response.body["error"]) == (500, "InternalError")
    assert len(api.received) == 1 + TRANSIENT_RETRIES


def test_a_connection_that_keeps_being_reset_is_unreachable_after_the_retries() -> None:
    with ScriptedApi(RESET) as api, pytest.raises(ApiUnreachable, match=r"^cannot reach http://127\.0\.0\.1:\d+: "):
        client_for(api, FakeTime()).request("GET", "/health")
    assert len(api.received) == 1 + TRANSIENT_RETRIES


def test_a_keyed_submit_that_fails_transiently_is_retried_with_the_same_key_and_body() -> None:
    # Given an API whose first answer to the submit is a 500 (the Lambda failed before it ran), then a reset
    with ScriptedApi(FAILED, RESET, ACCEPTED) as api:
        # When the client submits with an Idempotency-Key
        response = client_for(api, FakeTime()).request("POST", "/jobs", JOB, headers=KEY)

    # Then it retried the same request, and returns the job
    assert (response.status, response.body["job_id"]) == (202, "job-1")
    assert [(r.method, r.path, r.headers["Idempotency-Key"], r.body) for r in api.received] == [
        ("POST", "/jobs", "nightly-42", JOB)
    ] * 3


def test_a_keyed_submit_retried_after_a_500_waits_for_the_first_call_still_in_progress() -> None:
    # Given a 500 (API Gateway gave up, the first call still runs), then IN_PROGRESS, then the first call's job
    fake = FakeTime()
    with ScriptedApi(FAILED, in_progress("3"), ACCEPTED) as api:
        response = client_for(api, fake).request("POST", "/jobs", JOB, headers=KEY)
    assert (response.status, response.body["job_id"], len(api.received), fake.slept) == (202, "job-1", 3, [3.0])


@pytest.mark.parametrize("failure", [FAILED, Answer(429, {"message": "Too Many Requests"}), RESET])
def test_a_submit_without_a_key_is_never_repeated(failure: Answer) -> None:
    # Given a failure that may have come after the job was started
    with ScriptedApi(failure, ACCEPTED) as api:
        client = client_for(api, FakeTime())
        # When the client submits without an Idempotency-Key
        if failure is RESET:
            with pytest.raises(ApiUnreachable):
                client.request("POST", "/jobs", JOB)
        else:
            # Then the failure is the answer: repeating could start the job twice
            assert client.request("POST", "/jobs", JOB).status == failure.status
    assert len(api.received) == 1


@pytest.mark.parametrize(("method", "path"), [("POST", "/sweep"), ("DELETE", "/jobs/job-1")])
def test_requests_that_act_are_not_repeated(method: str, path: str) -> None:
    with ScriptedApi(FAILED, JOB_STATE) as api:
        assert client_for(api, FakeTime()).request(method, path).status == 500
    assert len(api.received) == 1


def test_a_plan_launches_nothing_and_is_retried() -> None:
    with ScriptedApi(FAILED, Answer(200, {"candidates": []})) as api:
        assert client_for(api, FakeTime()).request("POST", "/plan", JOB).status == 200
    assert len(api.received) == 2


@pytest.mark.parametrize(
    "refusal",
    [
        Answer(400, {"error": "RequestRefused", "field": "gpus", "message": "at most 8"}),
        Answer(403, {"message": "Missing Authentication Token"}),
        Answer(404, {"error": "JobNotFound", "field": "job_id", "message": "no job"}),
        Answer(413, {"error": "PayloadTooLarge", "message": "over 1 MiB"}, {"Retry-After": "0"}),
        Answer(501, {"error": "NotImplemented", "message": "no"}),
    ],
)
def test_a_refusal_is_not_retried(refusal: Answer) -> None:
    with ScriptedApi(refusal, JOB_STATE) as api:
        assert client_for(api, FakeTime()).request("GET", "/jobs/job-1").status == refusal.status
    assert len(api.received) == 1


def test_a_refused_connection_is_reported_at_once() -> None:
    # Given nothing listens on the port
    with ScriptedApi(JOB_STATE) as api:
        url = api.url
    # When / Then the client says so without retrying (the CLI's hint says what to do)
    with pytest.raises(ApiUnreachable, match=f"^cannot reach {url}: Connection refused$"):
        ApiClient(url).request("GET", "/jobs")


def test_the_backoff_grows_exponentially_with_jitter_and_is_bounded() -> None:
    # Given the policy of a read with the default backoff
    policy = ApiClient("http://127.0.0.1:1").retry_policy("GET", "/jobs/job-1")
    waits = []
    for _ in range(TRANSIENT_RETRIES):
        policy = policy.increment("GET", "/jobs/job-1", response=None, error=None, _pool=None, _stacktrace=None)
        waits.append(policy.get_backoff_time())

    # Then the first retry is at once, the next ones double (plus up to half a second of jitter), up to 8 s
    assert waits[0] == 0
    for wait, base in zip(waits[1:], (1, 2, 4, 8), strict=True):
        assert base <= wait <= min(base + 0.5, BACKOFF_MAX)
    assert sum(waits) <= 16.5  # about 16 s of retries in all
    # And the retries are bounded
    assert policy.is_exhausted() is False
    with pytest.raises(MaxRetryError):
        policy.increment("GET", "/jobs/job-1", error=None)


def test_a_retry_after_past_the_cap_is_capped() -> None:
    policy = ApiClient("http://127.0.0.1:1").retry_policy("GET", "/jobs")

    class Answered:
        headers = {"Retry-After": "86400"}

    assert policy.get_retry_after(Answered()) == 30


def test_a_client_resolves_its_credentials_once_and_signs_every_request_with_them(monkeypatch) -> None:
    # Given credentials in the environment, and a count of the credential chains the client walks
    import botocore.session

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    sessions: list[object] = []
    real = botocore.session.get_session
    monkeypatch.setattr(botocore.session, "get_session", lambda *a, **k: sessions.append(1) or real(*a, **k))
    with ScriptedApi(Answer(200, {}), Answer(200, {}), Answer(200, {})) as api:
        client = client_for(api, FakeTime())
        # When it sends three requests
        for _ in range(3):
            client.request("GET", "/jobs")

    # Then each is signed, by credentials resolved once (a chain walked per request cost a CLI poll loop its CPU)
    assert [r.headers["Authorization"].split("Credential=")[1][:11] for r in api.received] == ["AKIDEXAMPLE"] * 3
    assert len(sessions) == 1
