"""HTTP client for the GPU Pilot API: every request SigV4-signed (execute-api) with the standard AWS credential chain,
against a deployed stage as against the local cloud (which verifies signatures when its world has identities), so
`AWS_PROFILE=alice gpupilot ...` acts as alice. On loopback the chain stops at the environment and the profiles (no
instance or container metadata is asked), and with no credentials there the request goes unsigned.

Transient failures (5xx, 429, a connection reset or a read time-out) are retried with urllib3's `Retry`: bounded
exponential backoff with jitter, honouring Retry-After. Only requests that are safe to repeat are retried: reads
(GET, HEAD), POST /plan (it launches nothing) and POST /jobs with an Idempotency-Key (the API returns the first
call's job). A refused connection is not retried (nothing listens there: said at once), nor is any other 4xx.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlencode, urlsplit

import urllib3
from urllib3.util.retry import Retry

from gpupilot.cli.retries import (
    BACKOFF_FACTOR,
    BACKOFF_JITTER,
    BACKOFF_MAX,
    TRANSIENT_RETRIES,
    TRANSIENT_STATUSES,
    TransientRetry,
    root_cause,
    safe_to_repeat,
)
from gpupilot.cli.signing import endpoint_region, resolve_credentials

DEFAULT_LOCAL_ENDPOINT = "http://127.0.0.1:8765"
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}
# A POST /jobs whose Idempotency-Key is still being processed by an earlier call answers 409 IN_PROGRESS with
# Retry-After: the client waits that long (this long when the header is missing or unreadable) and asks again,
# for this long at most in all, and then returns the job the first call created.
IN_PROGRESS = "IN_PROGRESS"
DEFAULT_RETRY_AFTER_SECONDS = 1.0
IN_PROGRESS_LIMIT_SECONDS = 30.0


class ApiUnreachable(Exception):
    """The endpoint did not answer at all (or broke the connection, past the retries); `endpoint` is the URL that
    could not be reached (None when the request was never sent)."""

    def __init__(self, message: str, endpoint: str | None = None) -> None:
        super().__init__(message)
        self.endpoint = endpoint


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


class ApiClient:
    """Calls the API; a transient failure of a request safe to repeat is retried (`retries` times at most, with
    exponential backoff from `backoff_factor`); a 409 IN_PROGRESS is retried after its Retry-After, for
    `in_progress_limit_seconds` at most (then StillInProgress); any other answer is returned as it is."""

    def __init__(
        self,
        endpoint: str | None = None,
        timeout: float = 30,
        *,
        in_progress_limit_seconds: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        retries: int | None = None,
        backoff_factor: float | None = None,
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
        self.loopback = parts.hostname in LOOPBACK_HOSTS
        self.timeout = timeout
        self.in_progress_limit_seconds = (
            IN_PROGRESS_LIMIT_SECONDS if in_progress_limit_seconds is None else in_progress_limit_seconds
        )
        self._sleep = sleep
        self._clock = clock
        self.retries = TRANSIENT_RETRIES if retries is None else retries
        self.backoff_factor = BACKOFF_FACTOR if backoff_factor is None else backoff_factor
        self._pool = urllib3.PoolManager(timeout=urllib3.Timeout(connect=timeout, read=timeout))
        self._resolved: tuple[Any, Any] | None = None

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

    def retry_policy(self, method: str, path: str, headers: Mapping[str, str] | None = None) -> Retry:
        """What is retried for this request: transient answers and broken connections when it is safe to repeat,
        nothing otherwise (a refused connection never: nothing listens there)."""
        if not safe_to_repeat(method, path, headers):
            return TransientRetry(total=0, redirect=False, raise_on_status=False)
        return TransientRetry(
            total=self.retries,
            connect=0,
            read=self.retries,
            status=self.retries,
            other=0,
            redirect=False,
            allowed_methods=frozenset({method}),
            status_forcelist=TRANSIENT_STATUSES,
            backoff_factor=self.backoff_factor,
            backoff_max=BACKOFF_MAX,
            backoff_jitter=BACKOFF_JITTER if self.backoff_factor else 0.0,
            raise_on_status=False,
        )

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
        all_headers = self._signed_headers(method, url, data, all_headers)
        try:
            response = self._pool.request(
                method,
                url,
                body=data,
                headers=all_headers,
                retries=self.retry_policy(method, path, headers),
                redirect=False,
            )
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise ApiUnreachable(f"cannot reach {self.endpoint}: {root_cause(error)}", self.endpoint) from error
        return ApiResponse(response.status, _decode(response.data), _lower(response.headers.items()))

    @property
    def sign(self) -> bool:
        """Whether requests carry a SigV4 signature: always to a deployed API; to the local cloud, when the standard
        credential chain has credentials."""
        return not self.loopback or self._credentials()[1] is not None

    def _credentials(self) -> tuple[Any, Any]:
        """A botocore session and the credentials it resolves (None when it has none), resolved once per client as
        boto3 resolves them once per client: temporary credentials refresh themselves when they are frozen to sign."""
        if self._resolved is None:
            self._resolved = resolve_credentials(self.loopback)
        return self._resolved

    def _signed_headers(self, method: str, url: str, data: bytes | None, headers: dict[str, str]) -> dict[str, str]:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        session, credentials = self._credentials()
        if credentials is None:
            if self.loopback:
                return headers  # a local cloud without identities takes unsigned requests
            raise ApiUnreachable("no AWS credentials to sign the request with (IAM auth)")
        aws_request = AWSRequest(method=method, url=url, data=data, headers=headers)
        region = endpoint_region(self.endpoint, session.get_config_variable("region"))
        SigV4Auth(credentials.get_frozen_credentials(), "execute-api", region).add_auth(aws_request)
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
