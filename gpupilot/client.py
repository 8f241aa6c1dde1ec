"""HTTP client for the GPU Pilot API: plain on loopback, SigV4-signed (execute-api) for a deployed stage."""

from __future__ import annotations

import json
import math
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlencode, urlsplit

DEFAULT_LOCAL_ENDPOINT = "http://127.0.0.1:8765"
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
# A POST /jobs whose Idempotency-Key is still being processed by an earlier call answers 409 IN_PROGRESS with
# Retry-After: the client waits that long (this long when the header is missing or unreadable) and asks again,
# for this long at most in all, and then returns the job the first call created.
IN_PROGRESS = "IN_PROGRESS"
DEFAULT_RETRY_AFTER_SECONDS = 1.0
IN_PROGRESS_LIMIT_SECONDS = 30.0


class ApiUnreachable(Exception):
    """The endpoint did not answer at all."""


class InvalidEndpoint(ValueError):
    """The endpoint is not an http(s) URL with a host."""


class StillInProgress(Exception):
    """The API kept answering 409 IN_PROGRESS for an Idempotency-Key past the retry limit."""

    def __init__(self, response: ApiResponse, waited_seconds: float) -> None:
        super().__init__(
            f"the request with this Idempotency-Key was still in progress after {waited_seconds:.0f} s of retries"
        )
        self.response = response
        self.waited_seconds = waited_seconds


@dataclass
class ApiResponse:
    status: int
    body: Any
    headers: Mapping[str, str] = field(default_factory=dict)  # names in lower case

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def in_progress(self) -> bool:
        """A 409 IN_PROGRESS: an earlier call with the same Idempotency-Key is still being processed."""
        return self.status == 409 and isinstance(self.body, dict) and self.body.get("error") == IN_PROGRESS

    def retry_after_seconds(self, default: float = DEFAULT_RETRY_AFTER_SECONDS) -> float:
        """Retry-After in seconds (a number of seconds or an HTTP date), else `default`."""
        value = (self.headers.get("retry-after") or "").strip()
        try:
            seconds = float(value)
        except ValueError:
            try:
                return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())  # a date past: now
            except (TypeError, ValueError, IndexError):
                return default
        return seconds if math.isfinite(seconds) and seconds >= 0 else default

    def error_line(self) -> str:
        """One line saying what the API refused, naming the field when it did."""
        if isinstance(self.body, dict) and "message" in self.body:
            field = f" [{self.body['field']}]" if self.body.get("field") else ""
            return f"{self.body.get('error', 'Error')}{field}: {self.body['message']}"
        return f"HTTP {self.status}: {str(self.body)[:300]}"


def endpoint_region(endpoint: str) -> str:
    match = re.search(r"\.execute-api\.([a-z0-9-]+)\.amazonaws\.com", endpoint)
    if match:
        return match.group(1)
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


class ApiClient:
    """Calls the API; a 409 IN_PROGRESS is retried after its Retry-After, for `in_progress_limit_seconds` at most
    (then StillInProgress); any other answer is returned as it is."""

    def __init__(
        self,
        endpoint: str | None = None,
        timeout: float = 30,
        *,
        in_progress_limit_seconds: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.endpoint = (endpoint or os.environ.get("GPUPILOT_ENDPOINT") or DEFAULT_LOCAL_ENDPOINT).rstrip("/")
        problem = f"endpoint {self.endpoint!r} must be an http:// or https:// URL with a host"
        try:
            parts = urlsplit(self.endpoint)
            _ = parts.port  # raises on a port that is not a number
        except ValueError as error:
            raise InvalidEndpoint(problem) from error
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidEndpoint(problem)
        self.sign = parts.hostname not in LOOPBACK_HOSTS
        self.timeout = timeout
        self.in_progress_limit_seconds = (
            IN_PROGRESS_LIMIT_SECONDS if in_progress_limit_seconds is None else in_progress_limit_seconds
        )
        self._sleep = sleep
        self._clock = clock

    def request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        query: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> ApiResponse:
        response = self._send(method, path, body, query, headers)
        if not response.in_progress:
            return response
        began = self._clock()
        deadline = began + self.in_progress_limit_seconds
        while response.in_progress:
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise StillInProgress(response, self._clock() - began)
            self._sleep(min(response.retry_after_seconds(), remaining))
            response = self._send(method, path, body, query, headers)
        return response

    def _send(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None,
        query: dict[str, Any] | None,
        headers: dict[str, str] | None,
    ) -> ApiResponse:
        params = {k: v for k, v in (query or {}).items() if v is not None}
        url = self.endpoint + path + (f"?{urlencode(params)}" if params else "")
        data = json.dumps(body).encode() if body is not None else None
        all_headers = {"Content-Type": "application/json", "Accept": "application/json"} | (headers or {})
        if self.sign:
            all_headers = self._signed_headers(method, url, data, all_headers)
        request = urllib.request.Request(url, data=data, method=method, headers=all_headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return ApiResponse(response.status, _decode(response.read()), _lower(response.headers.items()))
        except urllib.error.HTTPError as error:
            return ApiResponse(
                error.code, _decode(error.read()), _lower(error.headers.items() if error.headers else [])
            )
        except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
            reason = getattr(error, "reason", error)
            raise ApiUnreachable(f"cannot reach {self.endpoint}: {reason}") from error

    def _signed_headers(self, method: str, url: str, data: bytes | None, headers: dict[str, str]) -> dict[str, str]:
        import botocore.session
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        credentials = botocore.session.get_session().get_credentials()
        if credentials is None:
            raise ApiUnreachable("no AWS credentials to sign the request with (IAM auth)")
        aws_request = AWSRequest(method=method, url=url, data=data, headers=headers)
        SigV4Auth(credentials.get_frozen_credentials(), "execute-api", endpoint_region(self.endpoint)).add_auth(
            aws_request
        )
        return dict(aws_request.headers.items())


def _lower(headers: Any) -> dict[str, str]:
    return {name.lower(): value for name, value in headers}


def _decode(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", errors="replace")
