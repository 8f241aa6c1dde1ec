"""The console's server (gpupilot/console/server.py): it passes on only the API's own routes, through the client it was
given, and only for its own pages; another site's page, a rebound host name or a path outside its assets get nothing."""

from __future__ import annotations

import hashlib
import http.client
import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from functions.shared.api.contract import ROUTES
from gpupilot.cli import render
from gpupilot.cli.client import ApiResponse, ApiUnreachable
from gpupilot.cli.main import main
from gpupilot.console.server import API_ROUTES, CONSOLE_HEADER, STATIC, ConsoleServer

ROOT = Path(__file__).resolve().parents[2]


class RecordingApi:
    """The CLI's client as the console sees it: each call recorded, answered with `answer` (or raising it)."""

    endpoint = "https://abc.execute-api.us-east-1.amazonaws.com/v1"
    sign = True

    def __init__(self, answer: ApiResponse | Exception | None = None) -> None:
        self.calls: list[tuple[str, str, Any, Any, Any]] = []
        self.answer = answer or ApiResponse(200, {"jobs": [], "next_token": None})

    def request(self, method: str, path: str, body: Any = None, query: Any = None, headers: Any = None) -> ApiResponse:
        self.calls.append((method, path, body, query, headers))
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.fixture
def console() -> Iterator[tuple[ConsoleServer, RecordingApi]]:
    api = RecordingApi()
    server = ConsoleServer(api, port=0).start()
    yield server, api
    server.stop()


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    data: bytes

    def json(self) -> Any:
        return json.loads(self.data)


def call(
    server: ConsoleServer, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> Reply:
    """One request, its path sent as written (`..` and all: an HTTP library would tidy it away)."""
    sent = {"Host": f"127.0.0.1:{server.port}", CONSOLE_HEADER: "1"} | (headers or {})
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        data = json.dumps(body).encode() if body is not None else b""
        for name, value in (sent | {"Content-Length": str(len(data))}).items():
            connection.putheader(name, value)
        connection.endheaders(data)
        response = connection.getresponse()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    finally:
        connection.close()


def test_every_api_route_the_console_calls_is_a_route_of_the_deployed_api():
    # Given the routes of the API's contract (what API Gateway and the api Lambda answer)
    deployed = {(route.method, route.path) for route in ROUTES}

    # When / Then: the console needs no route beside them
    assert set(API_ROUTES) <= deployed


def test_a_pages_call_is_passed_on_through_the_client_with_its_query_and_idempotency_key(console):
    # Given the console in front of a client
    server, api = console

    # When a page lists jobs, and submits one with a key
    listed = call(server, "GET", "/api/jobs?status=RUNNABLE&limit=100")
    call(server, "POST", "/api/jobs", {"name": "train"}, {"Idempotency-Key": "k-1", "Cookie": "secret=1"})

    # Then each went to the API as the page made it, the key along, nothing else of the browser's
    assert listed.status == 200 and listed.json() == {"jobs": [], "next_token": None}
    assert api.calls == [
        ("GET", "/jobs", None, {"status": "RUNNABLE", "limit": "100"}, None),
        ("POST", "/jobs", {"name": "train"}, {}, {"Idempotency-Key": "k-1"}),
    ]


@pytest.mark.parametrize(
    ("headers", "why"),
    [
        ({CONSOLE_HEADER: ""}, "no console header: a form or image of another site"),
        ({"Origin": "https://evil.example"}, "another origin"),
        ({"Host": "attacker.example:8780"}, "a name rebound to loopback"),
    ],
)
def test_a_call_that_is_not_the_consoles_own_page_is_refused_before_the_api_is_called(console, headers, why):
    # Given the console
    server, api = console

    # When a call comes that its own pages never make
    answer = call(server, "DELETE", "/api/jobs/j-1", headers=headers)

    # Then it is refused with the error shape, and nothing reached the API
    assert answer.status == 403, why
    assert set(answer.json()) == {"error", "field", "message"}
    assert api.calls == []


def test_an_api_route_the_console_does_not_use_is_not_passed_on(console):
    # Given the console
    server, api = console

    # When a page asks to buy a Capacity Block, or to go up out of the API's paths
    bought = call(server, "POST", "/api/reservations/purchase", {"offering_id": "cb-1"})
    climbed = call(server, "GET", "/api/jobs/..")

    # Then both are 404s naming the path, and the API never saw them
    assert (bought.status, bought.json()["field"]) == (404, "path")
    assert climbed.status == 404 and api.calls == []


def test_an_unreachable_api_is_a_502_in_the_error_shape(console):
    # Given an API that does not answer
    server, api = console
    api.answer = ApiUnreachable("cannot reach https://abc: timed out", "https://abc")

    # When a page lists jobs
    answer = call(server, "GET", "/api/jobs")

    # Then the page is told so in words, not with a stack trace
    assert answer.status == 502
    assert answer.json() == {
        "error": "ServiceUnreachable",
        "field": None,
        "message": "cannot reach https://abc: timed out",
    }


def test_pages_are_the_one_document_and_assets_are_served_only_from_the_packages_static_folder(console):
    # Given the console
    server, _ = console

    # When a page, an asset, a path outside the assets and an unknown page are asked for
    page = call(server, "GET", "/jobs/abc123")
    asset = call(server, "GET", "/static/lib.js")
    outside = call(server, "GET", "/static/../../../README.md")  # the repository's README, a served suffix
    unknown = call(server, "GET", "/nowhere")

    # Then the page is index.html with a policy that runs only the console's own scripts
    assert page.status == 200 and page.data == (STATIC / "index.html").read_bytes()
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert asset.headers["content-type"].startswith("text/javascript")
    assert (outside.status, unknown.status) == (404, 404)


def test_a_pasted_job_file_is_read_as_submit_reads_one_and_an_unknown_key_is_named(console):
    # Given the console
    server, _ = console

    # When a page sends a job file, and one with a misspelt key
    read = call(server, "POST", "/console/job-file", {"text": "name: train\ncommand: [python, t.py]\ngpus: 2\n"})
    misspelt = call(server, "POST", "/console/job-file", {"text": "name: train\ngpu: 2\n"})

    # Then the first is the request's fields, the second a 400 naming the key
    assert read.json() == {"request": {"name": "train", "command": ["python", "t.py"], "gpus": 2}}
    assert misspelt.status == 400 and misspelt.json()["field"] == "gpu"


def test_the_look_before_launch_is_the_clis_own_words(console):
    # Given a plan's candidates
    server, _ = console
    candidate = {
        "instance_type": "g6.xlarge",
        "gpu_model": "L4",
        "gpus": 1,
        "capacity": "on-demand",
        "hourly_usd": 0.8048,
        "region": "us-east-1",
    }

    # When the plan page asks for the summary before submitting
    said = call(server, "POST", "/console/launch-summary", {"candidates": [candidate], "warnings": ["one zone"]})

    # Then it is what `gpupilot submit` prints before it asks
    assert said.json() == {"summary": render.launch_summary([candidate], ["one zone"], 6)}


def test_the_vendored_chart_library_is_the_published_file_its_readme_names():
    # Given the vendored file and the sum its README records
    vendored = STATIC / "vendor" / "chart-4.6.1.umd.min.js"
    readme = (STATIC / "vendor" / "README.md").read_text()

    # When hashing it / Then it is byte for byte what npm publishes as chart.js@4.6.1
    digest = hashlib.sha256(vendored.read_bytes()).hexdigest()
    assert digest == "87364cc2b2a76a6684929e7d6b80b18a897794db38400caff1fcf1791c6925d2" and digest in readme
    assert 'src="/static/vendor/chart-4.6.1.umd.min.js"' in (STATIC / "index.html").read_text()


def test_every_asset_a_page_loads_ships_in_the_package():
    # Given the package data setuptools ships, and the assets the console has
    config = (ROOT / "pyproject.toml").read_text()
    assets = [path.relative_to(STATIC.parent) for path in STATIC.rglob("*") if path.is_file()]

    # When matching each asset against the package data's patterns
    patterns = json.loads(config.split('"gpupilot.console" = ', 1)[1].split("\n", 1)[0])
    unshipped = [str(asset) for asset in assets if not any(asset.match(pattern) for pattern in patterns)]

    # Then none is left out of the wheel
    assert assets and unshipped == []


def test_ui_on_a_port_already_taken_exits_2_with_one_line(capsys):
    # Given a port something else listens on
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        # When the console is asked to serve there
        code = main(["ui", "--port", str(port)])

    # Then it says so in one line, naming the flag
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--port" in err
