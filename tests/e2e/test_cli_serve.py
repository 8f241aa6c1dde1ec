"""`gpupilot serve --aws-port` puts the embedded AWS where asked; the console stays quiet: the two ready lines,
no tracebacks when clients hang up, no request dumps of the embedded AWS."""

from __future__ import annotations

import json
import re
import socket
import struct
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import boto3
import pytest

from gpupilot.localcloud.embedded_aws import free_port
from tests.e2e.conftest import GPUPILOT, READY_TIMEOUT_SECONDS, RunningCloud, stop_cloud

pytestmark = pytest.mark.e2e
PLAN = {"name": "quiet", "image": "img", "command": ["true"]}
# When a client hangs up: while it sends its request, once it has sent it (the server reads it and works on it), and
# once the answer has begun to arrive (the server is writing it).
HANG_UPS = ("mid-request", "after-request", "mid-answer")


def serve(tmp_path: Path, *args: str) -> tuple[RunningCloud, Path]:
    output = tmp_path / "serve.out"
    log_file = tmp_path / "cloud.log"
    argv = [GPUPILOT, "serve", "--port", "0", "--sweep-seconds", "0", "--log-file", str(log_file), *args]
    with output.open("w") as sink:
        process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + READY_TIMEOUT_SECONDS
    while time.monotonic() < deadline and process.poll() is None:
        printed = output.read_text()
        api, aws = re.search(r"listening on (\S+)", printed), re.search(r"aws endpoint (\S+)", printed)
        if api and aws:
            return RunningCloud(api.group(1), aws.group(1), process, log_file), output
        time.sleep(0.1)
    process.kill()
    raise AssertionError("gpupilot serve did not become ready:\n" + output.read_text())


def hang_up(url: str, request: bytes, when: str) -> None:
    """Send a request (half of it, `mid-request`) and reset the connection: at once, or once the answer has begun."""
    address = urlsplit(url)
    with socket.create_connection((address.hostname, address.port), timeout=60) as client:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.sendall(request[: len(request) // 2] if when == "mid-request" else request)
        if when == "mid-answer":
            assert client.recv(1), "the server closed the connection without an answer"


def threads(process: subprocess.Popen[str]) -> int:
    """How many threads the process runs (each connection a server is handling is one)."""
    return len(list(Path(f"/proc/{process.pid}/task").iterdir()))


def test_serve_puts_the_aws_endpoint_on_the_asked_port_and_keeps_the_console_quiet(tmp_path: Path) -> None:
    # Given a local cloud whose embedded AWS listens on a port of our choosing
    aws_port = free_port("127.0.0.1")
    cloud, output = serve(tmp_path, "--aws-port", str(aws_port))
    try:
        # Then the aws endpoint line names it, and AWS answers there
        assert cloud.aws_url == f"http://127.0.0.1:{aws_port}"
        sqs = boto3.client("sqs", endpoint_url=cloud.aws_url, region_name="us-east-1")
        assert sqs.list_queues()["ResponseMetadata"]["HTTPStatusCode"] == 200

        # When clients hang up before their answers, on the API and on the embedded AWS
        body = json.dumps(PLAN).encode()
        plan = b"POST /plan HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        dump = b"GET /moto-api/data.json HTTP/1.1\r\nHost: x\r\n\r\n"
        assert cloud.api.request("POST", "/plan", PLAN).status == 200  # (whatever a first plan starts, started)
        serving = threads(cloud.process)
        for when in HANG_UPS:
            hang_up(cloud.api_url, plan % len(body) + body, when)
            hang_up(cloud.aws_url, dump, when)

        # Then both servers finish with every connection (each had a thread of its own), and the cloud still answers
        cloud.until("the servers done with the connections hung up", lambda: threads(cloud.process) <= serving)
        assert cloud.api.request("GET", "/jobs", query={"limit": 1}).status == 200
    finally:
        stop_cloud(cloud)

    # And its console shows the two ready lines and nothing else
    assert output.read_text().splitlines() == [f"listening on {cloud.api_url}", f"aws endpoint {cloud.aws_url}"]
