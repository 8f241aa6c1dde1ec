"""The agent's own AWS client: its signatures are the SDK's, and its S3, EventBridge and CloudWatch calls work against
a moto server; it retries what AWS asks to be retried; the local cloud's boto3 port makes the same calls."""

from __future__ import annotations

import datetime
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials

from host_agent.aws import IAM_ACTIONS, AwsClient, AwsError, environment_credentials
from host_agent.bootstrap import Credentials, signed_headers
from host_agent.boto_aws import BotoCloud
from host_agent.tests.conftest import BUCKET, REGION

WHEN = datetime.datetime(2027, 1, 15, 8, 0, 0, tzinfo=datetime.timezone.utc)
KEYS = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token")


def botocore_signature(
    auth: type[SigV4Auth], method: str, url: str, service: str, headers: dict[str, str], body: bytes = b""
) -> str:
    request = AWSRequest(method=method, url=url, data=body, headers=headers)
    signer = auth(BotoCredentials(KEYS.access_key, KEYS.secret_key, KEYS.token), service, REGION)
    with mock.patch("botocore.auth.get_current_datetime", return_value=WHEN.replace(tzinfo=None)):
        signer.add_auth(request)
    return str(request.headers["Authorization"])


def test_an_s3_get_is_signed_as_the_sdk_signs_it() -> None:
    # Given a GET of an object whose key needs encoding
    url = f"https://{BUCKET}.s3.us-east-1.amazonaws.com/checkpoints/job%201/manifest.json"
    empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    # When the agent and botocore sign it / Then they agree
    ours = signed_headers("GET", url, REGION, "s3", {"x-amz-content-sha256": empty}, empty, KEYS, WHEN)
    assert ours["authorization"] == botocore_signature(S3SigV4Auth, "GET", url, "s3", {})


def test_an_s3_listing_with_a_query_is_signed_as_the_sdk_signs_it() -> None:
    url = f"https://{BUCKET}.s3.us-east-1.amazonaws.com/?list-type=2&prefix=checkpoints%2Fjob1%2Fmanifest.json"
    empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    ours = signed_headers("GET", url, REGION, "s3", {"x-amz-content-sha256": empty}, empty, KEYS, WHEN)
    assert ours["authorization"] == botocore_signature(S3SigV4Auth, "GET", url, "s3", {})


def test_an_eventbridge_call_is_signed_as_the_sdk_signs_it() -> None:
    import hashlib

    body = b'{"Entries": []}'
    headers = {"content-type": "application/x-amz-json-1.1", "x-amz-target": "AWSEvents.PutEvents"}
    url = "https://events.us-east-1.amazonaws.com/"
    ours = signed_headers("POST", url, REGION, "events", headers, hashlib.sha256(body).hexdigest(), KEYS, WHEN)
    assert ours["authorization"] == botocore_signature(SigV4Auth, "POST", url, "events", headers, body)


@pytest.fixture
def client(moto_endpoint: str) -> AwsClient:
    found = environment_credentials()
    assert found is not None
    return AwsClient(lambda: found, endpoint=moto_endpoint)


def test_files_go_to_s3_and_come_back_whole_and_a_key_is_found_only_when_it_exists(
    client: AwsClient, aws: Any, tmp_path: Path
) -> None:
    # Given a checkpoint file of a few megabytes
    source = tmp_path / "model.pt"
    source.write_bytes(bytes(range(256)) * 20_000)
    # When the agent uploads it, and its manifest
    client.put_file(REGION, BUCKET, "checkpoints/job1/1/model.pt", str(source))
    client.put_bytes(REGION, BUCKET, "checkpoints/job1/manifest.json", b'{"files": []}')
    # Then S3 holds them, and the agent reads them back
    target = tmp_path / "restored.pt"
    client.get_file(REGION, BUCKET, "checkpoints/job1/1/model.pt", str(target))
    assert target.read_bytes() == source.read_bytes()
    assert client.get_bytes(REGION, BUCKET, "checkpoints/job1/manifest.json") == b'{"files": []}'
    # And a key is found when it exists, never by its prefix alone
    assert client.exists(REGION, BUCKET, "checkpoints/job1/manifest.json")
    assert not client.exists(REGION, BUCKET, "checkpoints/job1/manifest")
    assert not client.exists(REGION, BUCKET, "checkpoints/job2/manifest.json")


def test_a_report_reaches_eventbridge_and_a_minute_of_utilisation_cloudwatch(client: AwsClient, aws: Any) -> None:
    # Given a report and a minute of a job's utilisation
    from host_agent.report import entry, metric_data

    # When the agent puts them
    client.put_events(REGION, [entry({"job_id": "job1", "sequence": 1, "reason": "ended"})])
    client.put_metrics(
        REGION,
        "GpuPilot",
        metric_data(
            "job1",
            "gpupilot-spot-g5",
            {"SampleCount": 6.0, "Sum": 480.0, "Minimum": 79.0, "Maximum": 81.0},
            WHEN.timestamp(),
        ),
    )
    # Then EventBridge routed the report by its source, and CloudWatch has the job's metric under both dimensions
    assert [r["job_id"] for r in aws.reports()] == ["job1"]
    listed = aws.client("cloudwatch").list_metrics(Namespace="GpuPilot", MetricName="GpuUtilization")["Metrics"]
    assert sorted(d["Value"] for m in listed for d in m["Dimensions"] if d["Name"] != "service") == [
        "gpupilot-spot-g5",
        "job1",
    ]


@pytest.fixture
def flaky() -> Iterator[tuple[str, list[str]]]:
    """An endpoint that answers S3's SlowDown twice, then 200; and one that refuses with AccessDenied."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            if "denied" in self.path:
                status, body = 403, b"<Error><Code>AccessDenied</Code><Message>no</Message></Error>"
            elif len([p for p in seen if "slow" in p]) <= 2:
                status, body = 503, b"<Error><Code>SlowDown</Code><Message>reduce</Message></Error>"
            else:
                status, body = 200, b"done"
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()


def test_a_throttled_call_is_made_again_and_a_refused_one_is_not(flaky: tuple[str, list[str]]) -> None:
    endpoint, seen = flaky
    client = AwsClient(lambda: KEYS, endpoint=endpoint, sleep=lambda _seconds: None)
    # When S3 says SlowDown twice / Then the third try's answer is the call's
    assert client.get_bytes(REGION, "bucket", "slow") == b"done"
    assert len([p for p in seen if "slow" in p]) == 3
    # When S3 refuses / Then the call fails at once with AWS's code
    with pytest.raises(AwsError) as refused:
        client.get_bytes(REGION, "bucket", "denied")
    assert refused.value.code == "AccessDenied" and len([p for p in seen if "denied" in p]) == 1


def test_every_call_of_the_agents_client_is_one_of_its_iam_actions_and_the_boto3_port_makes_the_same(
    moto_endpoint: str, aws: Any, tmp_path: Path
) -> None:
    # Given the boto3 port (the local cloud's) on the same moto server
    cloud = BotoCloud(lambda service, region: aws.client(service))
    source = tmp_path / "f"
    source.write_bytes(b"x")
    # When it makes each call of the port
    cloud.put_file(REGION, BUCKET, "checkpoints/j/f", str(source))
    cloud.put_bytes(REGION, BUCKET, "checkpoints/j/manifest.json", b"{}")
    cloud.get_file(REGION, BUCKET, "checkpoints/j/f", str(tmp_path / "g"))
    assert cloud.get_bytes(REGION, BUCKET, "checkpoints/j/manifest.json") == b"{}"
    assert cloud.exists(REGION, BUCKET, "checkpoints/j/manifest.json")
    cloud.put_events(REGION, [{"Source": "gpupilot.agent", "DetailType": "x", "Detail": json.dumps({"sequence": 1})}])
    cloud.put_metrics(REGION, "GpuPilot", [{"MetricName": "GpuUtilization", "Value": 1.0}])
    # Then the IAM actions of the operations it called are the agent's declared ones, no more, no fewer
    actions = {
        "PutObject": "s3:PutObject",
        "GetObject": "s3:GetObject",
        "ListObjectsV2": "s3:ListBucket",
        "PutEvents": "events:PutEvents",
        "PutMetricData": "cloudwatch:PutMetricData",
    }
    assert {actions[operation] for operation in aws.operations} == set(IAM_ACTIONS)
