"""S3, EventBridge and CloudWatch over HTTPS with Signature Version 4 (bootstrap.signed_headers), in the standard
library alone (the host has Python but no SDK), with the instance role's credentials from the instance metadata.

Each call retries what AWS asks to be retried (throttling, 5xx, a connection lost) a few times with jittered backoff,
as the SDKs' standard mode does. S3 uploads are streamed from the file with an unsigned payload (`UNSIGNED-PAYLOAD`,
allowed over HTTPS: S3 API Reference, "Authenticating Requests: Using the Authorization Header"), so a checkpoint is
read once; every S3 request names the bucket's expected owner (the deployment's account), so a bucket of that name
held by another account is refused by S3 itself.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import random
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, BinaryIO, Callable, Union

from host_agent.bootstrap import Credentials, signed_headers

# What the agent's calls are authorized against (the IAM drift check holds the instance role's grants to them).
IAM_ACTIONS = ("s3:GetObject", "s3:PutObject", "s3:ListBucket", "events:PutEvents", "cloudwatch:PutMetricData")
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
UNSIGNED = "UNSIGNED-PAYLOAD"
# Besides 429 and 5xx: what S3, EventBridge and CloudWatch answer when a call should be made again.
RETRIED_CODES = ("SlowDown", "Throttling", "ThrottlingException", "RequestTimeout")
CHUNK = 1 << 20


class AwsError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code = status, code


def environment_credentials() -> Credentials | None:
    """The standard variables, when set (off a host: the agent's tests)."""
    key, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    return Credentials(key, secret, os.environ.get("AWS_SESSION_TOKEN")) if key and secret else None


class RoleCredentials:
    """The instance role's temporary credentials from the instance metadata, fetched again five minutes before they
    expire; `get(path)` reads a meta-data path (host.Imds.get)."""

    def __init__(self, get: Callable[[str], str | None], clock: Callable[[], float] = time.time) -> None:
        self._get, self._clock = get, clock
        self._cached: Credentials | None = None

    def __call__(self) -> Credentials:
        cached = self._cached
        if cached is not None and (cached.expires is None or cached.expires - self._clock() > 300):
            return cached
        role = (self._get("iam/security-credentials/") or "").split()
        if not role:
            raise AwsError(0, "NoCredentials", "the instance has no role (instance metadata iam/security-credentials)")
        found = json.loads(self._get(f"iam/security-credentials/{role[0]}") or "{}")
        expires = datetime.datetime.strptime(found["Expiration"], "%Y-%m-%dT%H:%M:%SZ")
        self._cached = Credentials(found["AccessKeyId"], found["SecretAccessKey"], found.get("Token"),
                                   expires.replace(tzinfo=datetime.timezone.utc).timestamp())  # fmt: skip
        return self._cached


Body = Union[bytes, tuple[str, int], None]  # bytes, or (a file's path, its size) streamed


class AwsClient:
    """Implements ports.Cloud. `endpoint`: one URL for every service (a local AWS), S3 then path-style; `owner`: the
    account every bucket must belong to."""

    def __init__(
        self, credentials: Callable[[], Credentials], endpoint: str | None = None, owner: str | None = None,
        timeout: float = 30.0, attempts: int = 4, sleep: Callable[[float], None] = time.sleep,
    ) -> None:  # fmt: skip
        self._credentials, self._endpoint, self._owner = credentials, (endpoint or "").rstrip("/") or None, owner
        self._timeout, self._attempts, self._sleep = timeout, attempts, sleep

    # -- S3 ---------------------------------------------------------------------------------------------------------
    def _object_url(self, region: str, bucket: str, key: str = "") -> str:
        path = "/" + urllib.parse.quote(key, safe="/~")
        if self._endpoint:
            return f"{self._endpoint}/{bucket}{path if key else ''}"
        return f"https://{bucket}.s3.{region}.{_domain(region)}{path}"

    def put_file(self, region: str, bucket: str, key: str, path: str) -> None:
        size = os.path.getsize(path)
        # A content type of its own: urllib would say form data, which a server may parse the body as.
        headers = {"content-length": str(size), "content-type": "application/octet-stream"}
        self._call("PUT", "s3", region, self._object_url(region, bucket, key), headers, (path, size), UNSIGNED)

    def put_bytes(self, region: str, bucket: str, key: str, body: bytes) -> None:
        headers = {"content-length": str(len(body)), "content-type": "application/json"}
        self._call("PUT", "s3", region, self._object_url(region, bucket, key), headers, body,
                   hashlib.sha256(body).hexdigest())  # fmt: skip

    def get_bytes(self, region: str, bucket: str, key: str) -> bytes:
        return self._call("GET", "s3", region, self._object_url(region, bucket, key), {}, None, EMPTY_SHA256)

    def get_file(self, region: str, bucket: str, key: str, path: str) -> None:
        self._call("GET", "s3", region, self._object_url(region, bucket, key), {}, None, EMPTY_SHA256, into=path)

    def exists(self, region: str, bucket: str, key: str) -> bool:
        query = urllib.parse.urlencode({"list-type": "2", "prefix": key, "max-keys": "1"})
        answer = self._call("GET", "s3", region, f"{self._object_url(region, bucket)}/?{query}", {}, None, EMPTY_SHA256)
        return key in re.findall(r"<Key>([^<]*)</Key>", answer.decode())

    # -- EventBridge and CloudWatch ---------------------------------------------------------------------------------
    def put_events(self, region: str, entries: list[dict[str, Any]]) -> None:
        body = json.dumps({"Entries": entries}).encode()
        headers = {"content-type": "application/x-amz-json-1.1", "x-amz-target": "AWSEvents.PutEvents"}
        answer = json.loads(self._call("POST", "events", region, self._service_url("events", region), headers, body,
                                       hashlib.sha256(body).hexdigest()) or b"{}")  # fmt: skip
        if answer.get("FailedEntryCount"):
            raise AwsError(200, "FailedEntry", json.dumps(answer.get("Entries")))

    def put_metrics(self, region: str, namespace: str, data: list[dict[str, Any]]) -> None:
        """CloudWatch PutMetricData in the query protocol (lists as `member.N`)."""
        fields = {"Action": "PutMetricData", "Version": "2010-08-01", "Namespace": namespace}
        fields.update(_flattened("MetricData", data))
        body = urllib.parse.urlencode(sorted(fields.items())).encode()
        headers = {"content-type": "application/x-www-form-urlencoded; charset=utf-8"}
        self._call("POST", "monitoring", region, self._service_url("monitoring", region), headers, body,
                   hashlib.sha256(body).hexdigest())  # fmt: skip

    def _service_url(self, service: str, region: str) -> str:
        return f"{self._endpoint}/" if self._endpoint else f"https://{service}.{region}.{_domain(region)}/"

    # -- the call ---------------------------------------------------------------------------------------------------
    def _call(
        self, method: str, service: str, region: str, url: str, headers: dict[str, str], body: Body,
        payload_hash: str, into: str | None = None,
    ) -> bytes:  # fmt: skip
        for attempt in range(1, self._attempts + 1):
            try:
                return self._once(method, service, region, url, headers, body, payload_hash, into)
            except AwsError as error:
                retried = error.status >= 500 or error.status == 429 or error.code in RETRIED_CODES
                if attempt == self._attempts or not retried:
                    raise
            except (urllib.error.URLError, socket.timeout, ConnectionError):
                if attempt == self._attempts:
                    raise
            self._sleep(random.uniform(0, min(8.0, 0.5 * 2**attempt)))
        raise AssertionError("unreachable")

    def _once(
        self, method: str, service: str, region: str, url: str, headers: dict[str, str], body: Body,
        payload_hash: str, into: str | None,
    ) -> bytes:  # fmt: skip
        if service == "s3":
            headers = dict(headers, **{"x-amz-content-sha256": payload_hash})
            if self._owner:
                headers["x-amz-expected-bucket-owner"] = self._owner
        when = datetime.datetime.now(datetime.timezone.utc)
        sent = signed_headers(method, url, region, service, headers, payload_hash, self._credentials(), when)
        stream: BinaryIO | None = open(body[0], "rb") if isinstance(body, tuple) else None  # noqa: SIM115
        try:
            payload: Any = stream if stream is not None else body
            request = urllib.request.Request(url, data=payload, method=method, headers=sent)
            with urllib.request.urlopen(request, timeout=self._timeout) as answer:
                if into is None:
                    return bytes(answer.read())
                with open(into, "wb") as target:
                    for chunk in iter(lambda: answer.read(CHUNK), b""):
                        target.write(chunk)
                return b""
        except urllib.error.HTTPError as error:
            text = error.read().decode("utf-8", "replace")
            code = re.search(r"<Code>([^<]+)</Code>|\"__type\":\s*\"(?:[^\"#]*#)?([^\"]+)\"", text)
            raise AwsError(error.code, next(g for g in code.groups() if g) if code else "Error", text[:300]) from None
        finally:
            if stream is not None:
                stream.close()


def _flattened(prefix: str, value: Any) -> dict[str, str]:
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value, 1) for k, v in _flattened(f"{prefix}.member.{i}", item).items()}
    if isinstance(value, dict):
        return {k: v for name, item in value.items() for k, v in _flattened(f"{prefix}.{name}", item).items()}
    if prefix.endswith(".Timestamp"):
        return {prefix: datetime.datetime.fromtimestamp(value, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    return {prefix: repr(value) if isinstance(value, float) else str(value)}


def _domain(region: str) -> str:
    return "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
