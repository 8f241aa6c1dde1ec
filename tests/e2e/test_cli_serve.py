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

from gpupilot.localcloud.server import free_port
from tests.e2e.conftest import GPUPILOT, READY_TIMEOUT_SECONDS, RunningCloud, stop_cloud

pytestmark = pytest.mark.e2e
JOB = {"name": "quiet", "image": "img", "command": ["true"]}


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


def hang_up(url: str, request: bytes, after_seconds: float) -> None:
    """Send a request and reset the connection `after_seconds`, before the answer comes."""
    address = urlsplit(url)
    with socket.create_connection((address.hostname, address.port), timeout=10) as client:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.sendall(request)
        time.sleep(after_seconds)


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
        body = json.dumps(JOB).encode()
        submit = b"POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        for after_seconds in (0, 0.05, 0.2):  # before the request is read, while it is processed
            hang_up(cloud.api_url, submit % len(body) + body, after_seconds)
            hang_up(cloud.aws_url, b"GET /moto-api/data.json HTTP/1.1\r\nHost: x\r\n\r\n", after_seconds)
        time.sleep(2)

        # Then the cloud still answers
        assert cloud.api.request("GET", "/jobs", query={"limit": 1}).status == 200
    finally:
        stop_cloud(cloud)

    # And its console shows the two ready lines and nothing else
    assert output.read_text().splitlines() == [f"listening on {cloud.api_url}", f"aws endpoint {cloud.aws_url}"]
