"""The local API server under hostile input: every answer JSON in the error shape, never a 5xx for bad
input, no hang, no reset (the same route table as API Gateway)."""

from __future__ import annotations

import http.client
import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import pytest

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
    address = urlsplit(cloud.api_url)
    stalled = socket.create_connection((address.hostname, address.port), timeout=30)
    stalled.sendall(b"POST /plan HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
    try:
        began = time.monotonic()
        status, _, _ = raw(cloud, "GET", "/jobs?limit=1")
        assert status == 200 and time.monotonic() - began < 5
    finally:
        stalled.close()


def test_thirty_concurrent_requests_are_all_answered(cloud: RunningCloud) -> None:
    body = json.dumps(PLAN).encode()
    with ThreadPoolExecutor(max_workers=30) as pool:
        answers = list(pool.map(lambda _: raw(cloud, "POST", "/plan", body, {"Content-Type": "application/json"})[0],
                                range(30)))  # fmt: skip
    assert answers == [200] * 30
