"""The HTTP API at its edges, on the local cloud: what an HTTP client library would tidy up before sending (two
Content-Length headers, an HTTP/0.9 request line) is sent as raw bytes, and every error answers in one shape."""

from __future__ import annotations

import json
import socket
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.e2e.conftest import RunningCloud

pytestmark = pytest.mark.e2e
JOB = {"name": "edges", "image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "command": ["nvidia-smi", "-L"]}
ERROR_KEYS = {"error", "field", "message"}
# Long enough for a loaded machine; the server's own read timeout (10 s) is what an unanswered request waits for.
ANSWER_DEADLINE_SECONDS = 60


def exchange(cloud: RunningCloud, request: bytes, close_after_sending: bool = True) -> tuple[int, Any]:
    """Send raw bytes and read the whole answer: its status and JSON body (status 0 when none came back).
    `close_after_sending=False` keeps the client's side open, as a client waiting for its answer does."""
    address = urlsplit(cloud.api_url)
    with socket.create_connection((address.hostname, address.port), timeout=ANSWER_DEADLINE_SECONDS) as connection:
        connection.sendall(request)
        if close_after_sending:
            connection.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    if not answer:
        return 0, None
    head, _, payload = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), json.loads(payload) if payload else None


def request(method: str, path: str, body: bytes = b"", *headers: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: local", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def post_json(path: str, body: dict[str, Any]) -> bytes:
    payload = json.dumps(body).encode()
    return request("POST", path, payload, "Content-Type: application/json", f"Content-Length: {len(payload)}")


def test_a_nul_inside_the_command_is_refused_like_one_in_the_environment(cloud: RunningCloud) -> None:
    # Given a job whose second argument holds a NUL, and one whose variable's value does
    in_command = JOB | {"command": ["echo", "a\x00b"]}
    in_environment = JOB | {"environment": {"GREETING": "a\x00b"}}

    # When each is submitted
    command_status, command_error = exchange(cloud, post_json("/jobs", in_command))
    environment_status, environment_error = exchange(cloud, post_json("/jobs", in_environment))

    # Then both are the same 400, naming where the NUL is, in words
    assert (environment_status, environment_error["error"]) == (400, "ValidationError")
    assert (command_status, command_error["error"], command_error["field"]) == (400, "ValidationError", "command.1")
    assert "must not contain NUL" in command_error["message"] and "\\x00" not in command_error["message"]
    assert cloud.api.request("GET", "/jobs").body["jobs"] == []


def test_two_different_content_lengths_are_a_400_naming_the_header(cloud: RunningCloud) -> None:
    # Given a body framed by two Content-Length headers that disagree (which one ends it is how requests are smuggled)
    body = json.dumps(JOB).encode()
    framed = request("POST", "/plan", body, "Content-Type: application/json", "Content-Length: 5",
                     f"Content-Length: {len(body)}")  # fmt: skip

    # When it is sent / Then it is refused, naming the header
    status, error = exchange(cloud, framed)
    assert (status, error["error"], error["field"]) == (400, "BadRequest", "Content-Length")

    # And the same length twice is one length: read as any other
    agreed = request("POST", "/plan", body, "Content-Type: application/json", *[f"Content-Length: {len(body)}"] * 2)
    assert exchange(cloud, agreed)[0] == 200


def test_a_post_without_content_type_gets_the_documented_415(cloud: RunningCloud) -> None:
    # Given a JSON body sent without saying what it is
    body = json.dumps(JOB).encode()

    # When it is posted / Then it is a 415 naming Content-Type, as docs/http-api.md says
    status, error = exchange(cloud, request("POST", "/plan", body, f"Content-Length: {len(body)}"))
    assert (status, error["error"], error["field"]) == (415, "UnsupportedMediaType", "Content-Type")


def test_an_http_0_9_request_line_is_answered_at_once_with_the_json_400(cloud: RunningCloud) -> None:
    # Given a client that sends an HTTP/0.9 request line (no version, so no headers follow) and waits for its answer
    # When it is sent, the connection left open
    status, error = exchange(cloud, b"GET /jobs\r\n", close_after_sending=False)

    # Then the answer is the JSON 400, not silence until the server's read timeout closes the connection
    assert (status, error["error"], error["field"]) == (400, "BadRequest", "request")
    assert set(error) == ERROR_KEYS


def test_a_5000_digit_integer_is_a_400_naming_its_field(cloud: RunningCloud) -> None:
    # Given a number of 5000 digits, in a body and in a query parameter
    digits = "9" * 5000
    body = json.dumps(JOB)[:-1].encode() + b', "gpus": ' + digits.encode() + b"}"
    posted = request("POST", "/plan", body, "Content-Type: application/json", f"Content-Length: {len(body)}")

    # When each is sent
    body_status, body_error = exchange(cloud, posted)
    query_status, query_error = exchange(cloud, request("GET", f"/jobs?limit={digits}"))

    # Then each is a 400 naming its field, in the API's words rather than Python's
    assert (body_status, body_error["field"]) == (400, "gpus")
    assert (query_status, query_error["field"]) == (400, "limit")
    for said in (body_error["message"], query_error["message"]):
        assert "set_int_max_str_digits" not in said and "4300" not in said, said


def test_an_empty_query_number_is_a_400_naming_its_field_not_its_default(cloud: RunningCloud) -> None:
    # When the jobs are listed with `limit=` and nothing after it
    status, error = exchange(cloud, request("GET", "/jobs?limit="))

    # Then the empty value is refused as the bad value it is, not read as the default page size
    assert (status, error["field"]) == (400, "limit"), error


def test_every_error_body_has_the_same_keys_and_only_no_candidate_lists_the_rejected(cloud: RunningCloud) -> None:
    # Given a refusal of every kind: the router's, the body reader's, the request line's, a route's, a validator's
    body = json.dumps(JOB).encode()
    refusals = {
        "no route": request("GET", "/nowhere"),
        "method": request("PUT", "/jobs"),
        "too large": request("POST", "/plan", b"", "Content-Type: application/json", f"Content-Length: {2**24}"),
        "media type": request("POST", "/plan", body, "Content-Type: text/plain", f"Content-Length: {len(body)}"),
        "request line": b"GARBAGE\r\n\r\n",
        "no job": request("GET", "/jobs/nope"),
        "query": request("GET", "/jobs?limit=0"),
        "validation": post_json("/plan", JOB | {"gpus": 99}),
    }
    no_candidate = post_json("/jobs", JOB | {"instance_types": ["g4dn.xlarge"], "max_hourly_usd": 0.01})

    # When each is sent
    answers = {kind: exchange(cloud, sent) for kind, sent in refusals.items()}
    status, refused = exchange(cloud, no_candidate)

    # Then every error carries error, field and message, and nothing else
    assert {kind: (status >= 400, set(error)) for kind, (status, error) in answers.items()} == {
        kind: (True, ERROR_KEYS) for kind in refusals
    }
    # And a NoCandidate adds the offerings it left out, as documented
    assert (status, refused["error"], set(refused)) == (400, "NoCandidate", ERROR_KEYS | {"rejected"})
    assert refused["rejected"]


def test_a_refused_value_is_said_in_words_not_a_library_prefix_or_a_regular_expression(cloud: RunningCloud) -> None:
    # Given a name and an image the API refuses for their form
    for field, value in (("name", "two words"), ("image", "Upper/Case"), ("regions", ["nowhere"])):
        # When each is planned
        status, error = exchange(cloud, post_json("/plan", JOB | {field: value}))

        # Then the refusal names the field and says what it takes, with no pydantic prefix and no pattern
        assert (status, error["field"].split(".")[0]) == (400, field), error
        assert "Value error" not in error["message"] and "pattern" not in error["message"], error
        assert "^" not in error["message"] and "$" not in error["message"], error


def test_a_plan_counts_in_words_not_with_a_plural_in_parentheses(cloud: RunningCloud) -> None:
    # Given a job of four GPUs, which every one-GPU type fails to fit
    status, plan = exchange(cloud, post_json("/plan", JOB | {"gpus": 4}))

    # When its rejections are read / Then each count reads in its own number
    reasons = {rejected["instance_type"]: rejected["reason"] for rejected in plan["rejected"]}
    assert status == 200 and reasons["g4dn.xlarge"] == "1 GPU, request needs 4", reasons["g4dn.xlarge"]
    assert not [reason for reason in reasons.values() if "(s)" in reason]
