"""The agent's tests, up to the device and the cloud: a fake instance metadata service (HTTP), stand-in `docker` and
`nvidia-smi` commands, and S3, EventBridge and CloudWatch on a moto server. No GPU, no Docker, no AWS account."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest

ACCOUNT = "123456789012"
REGION = "us-east-1"
BUCKET = f"gpupilot-hosts-{ACCOUNT}-{REGION}"


@pytest.fixture(autouse=True)
def _fake_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing here can reach a real account."""
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    """S3, EventBridge and CloudWatch on a moto server (what the agent's own HTTP client talks to)."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def aws(moto_endpoint: str) -> Iterator[Any]:
    """boto3 clients of the moto server, the hosts bucket made, and an SQS queue every agent report is routed to
    (EventBridge delivers what a rule matches to its targets: the reports can be read back)."""
    session = boto3.session.Session(region_name=REGION)
    operations: list[str] = []

    def client(service: str) -> Any:
        made = session.client(service, endpoint_url=moto_endpoint)
        made.meta.events.register("before-call", lambda model, **_: operations.append(model.name))
        return made

    s3 = client("s3")
    if BUCKET not in [b["Name"] for b in s3.list_buckets().get("Buckets", [])]:
        s3.create_bucket(Bucket=BUCKET)
    sqs, events = client("sqs"), client("events")
    queue = sqs.create_queue(QueueName="reports")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(Name="reports", EventPattern=json.dumps({"source": ["gpupilot.agent"]}))
    events.put_targets(Rule="reports", Targets=[{"Id": "q", "Arn": arn}])
    clients = Clients(client, queue, operations)
    clients.reports()  # the queue starts empty
    operations.clear()
    yield clients
    clients.reports()


@dataclass
class Clients:
    client: Any
    queue: str
    operations: list[str]

    def reports(self) -> list[dict[str, Any]]:
        """The agent's reports EventBridge delivered, in order (their detail)."""
        found = []
        while True:
            batch = self.client("sqs").receive_message(QueueUrl=self.queue, MaxNumberOfMessages=10)
            messages = batch.get("Messages", [])
            if not messages:
                return sorted(found, key=lambda detail: detail["sequence"])
            for message in messages:
                found.append(json.loads(message["Body"])["detail"])
                self.client("sqs").delete_message(QueueUrl=self.queue, ReceiptHandle=message["ReceiptHandle"])


@dataclass
class FakeImds:
    """The instance metadata service, IMDSv2 only (a request without the session token is refused, as the launch
    template's `http_tokens: required` makes it)."""

    url: str = ""
    instance_id: str = "i-0123456789abcdef0"
    instance_type: str = "g5.xlarge"
    spot_action: dict[str, str] | None = None
    requests: list[str] = field(default_factory=list)

    def answer(self, method: str, path: str, token: str | None) -> tuple[int, str]:
        self.requests.append(f"{method} {path}")
        if method == "PUT" and path == "/latest/api/token":
            return 200, "session-token"
        if token != "session-token":
            return 401, ""
        documents = {
            "/latest/meta-data/instance-id": self.instance_id,
            "/latest/meta-data/instance-type": self.instance_type,
            "/latest/meta-data/placement/region": REGION,
            "/latest/dynamic/instance-identity/document": json.dumps({"accountId": ACCOUNT, "region": REGION}),
            "/latest/meta-data/iam/security-credentials/": "gpupilot-gpu-instance",
            "/latest/meta-data/iam/security-credentials/gpupilot-gpu-instance": json.dumps(
                {
                    "AccessKeyId": "ASIAROLE",
                    "SecretAccessKey": "role-secret",
                    "Token": "role-token",
                    "Expiration": "2099-01-01T00:00:00Z",
                }
            ),
        }
        if self.spot_action is not None:
            documents["/latest/meta-data/spot/instance-action"] = json.dumps(self.spot_action)
        return (200, documents[path]) if path in documents else (404, "")


@pytest.fixture
def imds() -> Iterator[FakeImds]:
    fake = FakeImds()

    class Handler(BaseHTTPRequestHandler):
        def _reply(self) -> None:
            status, body = fake.answer(self.command, self.path, self.headers.get("X-aws-ec2-metadata-token"))
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        do_GET = do_PUT = _reply

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield fake
    server.shutdown()


@contextlib.contextmanager
def serve(document: Any) -> Iterator[str]:
    """An HTTP endpoint answering every GET with `document` (JSON): the ECS agent's introspection API."""
    body = json.dumps(document).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/tasks"
    finally:
        server.shutdown()
