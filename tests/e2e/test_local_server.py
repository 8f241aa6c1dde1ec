"""The local API server under hostile input: every answer JSON in the error shape, never a 5xx for bad
input, no hang, no reset (the same route table as API Gateway)."""

from __future__ import annotations

import http.client
import json
import socket
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import pytest

from functions.shared.domain.core.clock import seconds_between
from tests.e2e.conftest import RunningCloud

pytestmark = pytest.mark.e2e
PLAN = {"name": "p", "image": "img", "command": ["true"]}


def raw(cloud: RunningCloud, method: str, path: str, body: bytes | None = None,
        headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:  # fmt: skip
    address = urlsplit(cloud.api_url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=15)
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    payload = response.read()
    connection.close()
    return response.status, dict(response.getheaders()), json.loads(payload) if payload else None


def test_an_unknown_route_is_a_json_404_in_the_error_shape(cloud: RunningCloud) -> None:
    status, headers, body = raw(cloud, "GET", "/nowhere")
    assert (status, headers["Content-Type"], body["error"], body["field"]) == (
        404,
        "application/json",
        "NotFound",
        "path",
    )


def test_a_wrong_method_is_a_405_that_says_what_is_allowed(cloud: RunningCloud) -> None:
    status, headers, body = raw(cloud, "PUT", "/jobs")
    assert (status, body["error"]) == (405, "MethodNotAllowed")
    assert headers["Allow"] == "GET, POST, HEAD, OPTIONS"


def test_options_and_head_are_answered(cloud: RunningCloud) -> None:
    status, headers, body = raw(cloud, "OPTIONS", "/jobs/abc")
    assert (status, headers["Allow"], body) == (204, "DELETE, GET, HEAD, OPTIONS", None)
    status, headers, body = raw(cloud, "HEAD", "/jobs")
    assert (status, headers["Content-Type"], body) == (200, "application/json", None)


def test_a_body_that_is_not_json_is_a_415_and_a_deeply_nested_one_a_400(cloud: RunningCloud) -> None:
    status, _, body = raw(cloud, "POST", "/plan", b"name=x", {"Content-Type": "text/plain"})
    assert (status, body["field"]) == (415, "Content-Type")
    status, _, body = raw(cloud, "POST", "/plan", b"[" * 100_000, {"Content-Type": "application/json"})
    assert (status, body["field"]) == (400, "body")


def test_path_parameters_are_url_decoded(cloud: RunningCloud) -> None:
    status, _, body = raw(cloud, "GET", "/jobs/a%20b")
    assert (status, body["message"]) == (404, "no job a b")


def test_a_client_that_sends_less_than_its_content_length_holds_nobody_else(cloud: RunningCloud) -> None:
    # Given a client that sent one byte of the hundred its Content-Length promised (the server waits for the rest)
    address = urlsplit(cloud.api_url)
    stalled = socket.create_connection((address.hostname, address.port), timeout=30)
    stalled.sendall(b"POST /plan HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
    try:
        # When another client asks
        status, _, _ = raw(cloud, "GET", "/jobs?limit=1")
        # Then it is answered while the server still waits on the stalled one (which has had neither an answer nor
        # its connection closed), not once the server has given up on it
        stalled.setblocking(False)
        with pytest.raises(BlockingIOError):
            stalled.recv(1)
        assert status == 200
    finally:
        stalled.close()


def test_the_local_clouds_clock_is_read_and_moved_forward_at_local_clock_and_never_back(cloud: RunningCloud) -> None:
    # Given the local cloud's clock as it stands
    status, _, before = raw(cloud, "GET", "/local/clock")
    assert status == 200 and set(before) == {"now", "advanced_seconds"}

    # When it is advanced a minute, then asked to move back, by nothing numeric, or with another method
    status, _, after = raw(cloud, "POST", "/local/clock", json.dumps({"advance_seconds": 60}).encode())
    refusals = [
        raw(cloud, "POST", "/local/clock", json.dumps(body).encode())
        for body in ({"advance_seconds": -1}, {"advance_seconds": "soon"}, {"advance_seconds": True}, {}, [1])
    ]
    wrong_method = raw(cloud, "DELETE", "/local/clock")

    # Then the advance moved it a minute ahead (and real time a little), the rest were refused naming what is wrong,
    # and the clock did not move for them
    assert status == 200 and after["advanced_seconds"] == before["advanced_seconds"] + 60
    assert seconds_between(before["now"], after["now"]) >= 60
    assert [(code, body["field"]) for code, _, body in refusals] == [(400, "advance_seconds")] * 5
    assert (wrong_method[0], wrong_method[1]["Allow"]) == (405, "GET, POST")
    assert raw(cloud, "GET", "/local/clock")[2]["advanced_seconds"] == after["advanced_seconds"]


def test_thirty_concurrent_requests_are_all_answered(cloud: RunningCloud) -> None:
    body = json.dumps(PLAN).encode()
    with ThreadPoolExecutor(max_workers=30) as pool:
        answers = list(pool.map(lambda _: raw(cloud, "POST", "/plan", body, {"Content-Type": "application/json"})[0],
                                range(30)))  # fmt: skip
    assert answers == [200] * 30


# -- what arrives at the socket: bodies of any framing and size, and requests http.server itself refuses -------
def exchange(cloud: RunningCloud, request: bytes) -> tuple[int, dict[str, str], Any]:
    """Send raw bytes, then read the whole answer (the server closes after each): status, headers, JSON body."""
    address = urlsplit(cloud.api_url)
    with socket.create_connection((address.hostname, address.port), timeout=30) as connection:
        connection.sendall(request)
        connection.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, payload = answer.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in header_lines)
    return int(status_line.split(" ")[1]), headers, json.loads(payload) if payload else None


def post(path: str, body: bytes, *headers: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: local", "Content-Type: application/json", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def chunked(body: bytes, size: int) -> bytes:
    parts = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x;ext=1\r\n%s\r\n" % (len(part), part) for part in parts) + b"0\r\nTrailer: x\r\n\r\n"


def test_a_body_over_the_limit_is_read_before_the_413_so_the_client_reads_the_answer(cloud: RunningCloud) -> None:
    # Given a body of 4 MiB, over the API's 1 MiB and under API Gateway's 10 MB, sent whole before reading
    body = b"x" * (4 * 1024 * 1024)
    # When it is posted / Then the client reads a JSON 413, not a reset connection
    status, headers, error = exchange(cloud, post("/plan", body, f"Content-Length: {len(body)}"))
    assert (status, headers["Content-Type"], error["error"], error["field"]) == (
        413,
        "application/json",
        "PayloadTooLarge",
        "body",
    )


def test_a_chunked_body_is_read_like_any_other(cloud: RunningCloud) -> None:
    # Given a plan request sent in chunks, with a chunk extension and a trailer
    body = json.dumps(PLAN).encode()
    # When it is posted / Then it is planned as if sent with a Content-Length
    status, _, plan = exchange(cloud, post("/plan", chunked(body, 7), "Transfer-Encoding: chunked"))
    assert status == 200 and plan["candidates"], plan


def test_a_chunked_body_over_the_limit_is_read_then_refused_with_a_413(cloud: RunningCloud) -> None:
    body = b"x" * (2 * 1024 * 1024)
    status, _, error = exchange(cloud, post("/plan", chunked(body, 256 * 1024), "Transfer-Encoding: chunked"))
    assert (status, error["error"], error["field"]) == (413, "PayloadTooLarge", "body")


def test_a_body_over_api_gateways_own_limit_is_refused_without_waiting_for_it(cloud: RunningCloud) -> None:
    # Given a Content-Length over API Gateway's 10 MB, and no body sent
    status, _, error = exchange(cloud, post("/plan", b"", f"Content-Length: {11 * 1024 * 1024}"))
    # Then the answer comes at once
    assert (status, error["error"], error["field"]) == (413, "PayloadTooLarge", "body")


@pytest.mark.parametrize(
    "framing",
    [
        "Transfer-Encoding: gzip",  # no other coding is supported
        "Transfer-Encoding: chunked\r\nContent-Length: 5",  # two framings: a smuggling attempt
    ],
)
def test_a_body_framing_the_server_cannot_read_is_a_400_naming_it(cloud: RunningCloud, framing: str) -> None:
    status, _, error = exchange(cloud, post("/plan", b"5\r\nhello\r\n0\r\n\r\n", framing))
    assert (status, error["error"], error["field"]) == (400, "BadRequest", "Transfer-Encoding")


@pytest.mark.parametrize("body", [b"zz\r\nhello\r\n0\r\n\r\n", b"5\r\nhelloXX0\r\n\r\n", b"5\r\nhel"])
def test_a_malformed_chunked_body_is_a_400_naming_the_body(cloud: RunningCloud, body: bytes) -> None:
    status, _, error = exchange(cloud, post("/plan", body, "Transfer-Encoding: chunked"))
    assert (status, error["error"], error["field"]) == (400, "BadRequest", "body")


@pytest.mark.parametrize(
    ("request_line", "status"),
    [
        (b"GARBAGE", 400),  # no method, path and version
        (b"GET /jobs HTTP/one", 400),  # not a version
        (b"GET /jobs HTTP/9.9", 400),  # a version no server speaks
        (b"GET /jobs with spaces HTTP/1.1", 400),
        (b"GET /" + b"a" * 70_000 + b" HTTP/1.1", 414),
    ],
)
def test_a_malformed_request_line_gets_the_json_error_shape(
    cloud: RunningCloud, request_line: bytes, status: int
) -> None:
    answered, headers, error = exchange(cloud, request_line + b"\r\nHost: local\r\n\r\n")
    assert (answered, headers["Content-Type"]) == (status, "application/json")
    assert set(error) == {"error", "field", "message"} and error["message"]


@pytest.mark.parametrize(
    "headers",
    [b"X-Big: " + b"a" * 70_000 + b"\r\n", b"".join(b"X-%d: a\r\n" % n for n in range(150))],
)
def test_oversized_headers_get_the_json_error_shape(cloud: RunningCloud, headers: bytes) -> None:
    status, answered, error = exchange(cloud, b"GET /jobs HTTP/1.1\r\nHost: local\r\n" + headers + b"\r\n")
    assert (status, answered["Content-Type"], error["error"], error["field"]) == (
        431,
        "application/json",
        "RequestHeaderFieldsTooLarge",
        "headers",
    )
