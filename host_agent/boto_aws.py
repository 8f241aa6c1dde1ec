"""ports.Cloud over boto3 clients, where boto3 exists: the agent's decisions (core.Agent) run over it off a host (the
daemon's test runs them on moto with it). The same calls, with the same IAM actions, as aws.AwsClient makes on a host
(host_agent/tests/test_aws.py holds the two to it). Never shipped to a host (it has no boto3)."""

from __future__ import annotations

from typing import Any, Callable

from host_agent.aws import IAM_ACTIONS

__all__ = ["IAM_ACTIONS", "BotoCloud"]


class BotoCloud:
    """Implements ports.Cloud; `client(service, region)` makes the boto3 client (the local cloud's, observed)."""

    def __init__(self, client: Callable[[str, str], Any]) -> None:
        self._client = client

    def put_file(self, region: str, bucket: str, key: str, path: str) -> None:
        with open(path, "rb") as body:
            self._client("s3", region).put_object(Bucket=bucket, Key=key, Body=body)

    def get_file(self, region: str, bucket: str, key: str, path: str) -> None:
        answer = self._client("s3", region).get_object(Bucket=bucket, Key=key)
        with open(path, "wb") as target:
            for chunk in answer["Body"].iter_chunks(1 << 20):
                target.write(chunk)

    def put_bytes(self, region: str, bucket: str, key: str, body: bytes) -> None:
        self._client("s3", region).put_object(Bucket=bucket, Key=key, Body=body, ContentType="application/json")

    def get_bytes(self, region: str, bucket: str, key: str) -> bytes:
        return bytes(self._client("s3", region).get_object(Bucket=bucket, Key=key)["Body"].read())

    def exists(self, region: str, bucket: str, key: str) -> bool:
        listed = self._client("s3", region).list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1)
        return any(found["Key"] == key for found in listed.get("Contents", []))

    def put_events(self, region: str, entries: list[dict[str, Any]]) -> None:
        answer = self._client("events", region).put_events(Entries=entries)
        if answer.get("FailedEntryCount"):
            raise RuntimeError(f"PutEvents failed: {answer['Entries']}")

    def put_metrics(self, region: str, namespace: str, data: list[dict[str, Any]]) -> None:
        self._client("cloudwatch", region).put_metric_data(Namespace=namespace, MetricData=data)
