"""The local cloud's own routes beside the API's (`/local/...`): answered to loopback clients only; to anyone else
they are no route at all."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from gpupilot.localcloud.http_api import ApiServer, LocalRoute, _loopback


def no_api(event: dict[str, Any]) -> dict[str, Any]:
    raise AssertionError(f"the API was invoked for a local route: {event['path']}")


def ask(host: str, port: int, method: str, path: str) -> tuple[int, dict[str, Any]]:
    connection = http.client.HTTPConnection(host, port, timeout=30)
    connection.request(method, path)
    response = connection.getresponse()
    answer = response.status, json.loads(response.read() or b"{}")
    connection.close()
    return answer


@pytest.fixture
def server() -> Iterator[ApiServer]:
    """The local API on every interface, with one local route that says who asked and how."""
    route = LocalRoute(("GET",), lambda method, body: (200, {"method": method, "body": body}))
    running = ApiServer("0.0.0.0", 0, no_api, {"/local/thing": route})
    running.start()
    yield running
    running.stop()


@pytest.mark.parametrize(
    ("address", "loopback"),
    [(("127.0.0.1", 5), True), (("127.8.9.10", 5), True), (("::1", 5, 0, 0), True), (("192.0.2.7", 5), False),
     (("10.0.0.1", 5), False), (("::ffff:10.0.0.1", 5, 0, 0), False), (("", 5), False), ("unix", False)],
)  # fmt: skip
def test_only_a_loopback_address_is_loopback(address: Any, loopback: bool) -> None:
    assert _loopback(address) is loopback


def test_a_local_route_answers_a_loopback_client_and_refuses_other_methods_saying_which(server: ApiServer) -> None:
    assert ask("127.0.0.1", server.port, "GET", "/local/thing") == (200, {"method": "GET", "body": None})
    status, body = ask("127.0.0.1", server.port, "DELETE", "/local/thing")
    assert (status, body["error"], body["field"]) == (405, "MethodNotAllowed", "method")


def test_a_local_route_is_no_route_to_a_client_from_elsewhere(server: ApiServer) -> None:
    # Given the machine's own address on a network (not loopback), if it has one
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the interface a route would use
            address = probe.getsockname()[0]
        except OSError:
            address = "127.0.0.1"
    if _loopback((address, 0)):
        pytest.skip("this machine has no address but loopback")

    # When a client asks there / Then the local route is an unknown route, as any path the API does not have
    status, body = ask(address, server.port, "GET", "/local/thing")
    assert (status, body["error"]) == (404, "NotFound")
