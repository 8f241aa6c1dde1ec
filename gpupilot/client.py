"""HTTP client for the GPU Pilot API: plain on loopback, SigV4-signed (execute-api) for a deployed stage."""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

DEFAULT_LOCAL_ENDPOINT = "http://127.0.0.1:8765"
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1", "[::1]"}


class ApiUnreachable(Exception):
    """The endpoint did not answer at all."""


class InvalidEndpoint(ValueError):
    """The endpoint is not an http(s) URL with a host."""


@dataclass
class ApiResponse:
    status: int
    body: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

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
    def __init__(self, endpoint: str | None = None, timeout: float = 30) -> None:
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

    def request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        query: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
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
                return ApiResponse(response.status, _decode(response.read()))
        except urllib.error.HTTPError as error:
            return ApiResponse(error.code, _decode(error.read()))
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


def _decode(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", errors="replace")
