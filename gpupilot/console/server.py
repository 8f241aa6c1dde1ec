"""The console's HTTP server, on loopback: its pages and assets, the API routes the pages call (passed on through the
CLI's client, which signs them for a deployed API), and two helpers that reuse the CLI's own code (a job file read
as `submit -f` reads it, and the look before launch `submit` prints).

Another web page the person has open must not drive the console (it could submit or cancel jobs with their
credentials), nor a name that resolves to 127.0.0.1 (DNS rebinding): every call must name this server as its Host,
and every API or helper call must carry the console's own header, which no page of another origin can send without
a CORS preflight this server never approves, and an Origin, if any, of this server.
"""

from __future__ import annotations

import json
import re
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from gpupilot.cli.client import ApiUnreachable, StillInProgress
from gpupilot.console import helpers
from gpupilot.console.helpers import Api, error_body

DEFAULT_PORT = 8780
STATIC = Path(__file__).parent / "static"
CONSOLE_HEADER = "X-GpuPilot-Console"
MAX_BODY_BYTES = 1 << 20
# The routes of the HTTP API the pages call, in its own syntax: each is a route of functions/shared/api/contract.py
# (a test holds them to it), so the console needs nothing the deployed API does not already answer.
API_ROUTES: tuple[tuple[str, str], ...] = (
    ("GET", "/jobs"),
    ("POST", "/jobs"),
    ("GET", "/jobs/{job_id}"),
    ("DELETE", "/jobs/{job_id}"),
    ("GET", "/jobs/{job_id}/logs"),
    ("POST", "/plan"),
    ("GET", "/costs"),
    ("GET", "/health"),
    ("POST", "/sweep"),
    ("GET", "/reservations"),
)
# The headers a page may send on to the API (POST /jobs' key makes a retried submit one job).
FORWARDED_HEADERS = ("Idempotency-Key",)
PAGES = re.compile(r"^/(costs|fleet|plan|jobs/[^/]+)?$")
CONTENT_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css", ".md": "text/plain"}
# Everything the pages load is this server's; nothing runs inline, and no other site may frame them.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _pattern(template: str) -> re.Pattern[str]:
    # A path parameter is one segment, never `.` or `..`.
    return re.compile("^" + re.sub(r"\{\w+\}", r"(?!\\.\\.?(?:/|$))[^/]+", template) + "$")


ROUTE_PATTERNS = [(method, _pattern(template)) for method, template in API_ROUTES]


def api_route_allowed(method: str, path: str) -> bool:
    """Whether a page may make this call of the API."""
    return any(method == allowed and pattern.match(path) for allowed, pattern in ROUTE_PATTERNS)


class ConsoleServer:
    """Serves the console at `url` until `stop()`; `api` answers the calls the pages make."""

    def __init__(self, api: Api, port: int = DEFAULT_PORT, host: str = "127.0.0.1") -> None:
        self.api = api
        self.httpd = ThreadingHTTPServer((host, port), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.console = self  # type: ignore[attr-defined]
        self.port = int(self.httpd.server_address[1])
        self.url = f"http://{host}:{self.port}/"
        self.hosts = {f"{name}:{self.port}" for name in ("127.0.0.1", "localhost", "[::1]")}
        self._thread: threading.Thread | None = None

    def start(self) -> ConsoleServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="console", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    server_version = "gpupilot-console"
    protocol_version = "HTTP/1.1"

    @property
    def console(self) -> ConsoleServer:
        return self.server.console  # type: ignore[attr-defined,no-any-return]

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal `gpupilot ui` runs in shows its URL, not every asset fetched."""

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_PUT(self) -> None:
        self._reply_json(405, error_body("MethodNotAllowed", "the console takes GET, POST and DELETE"))

    do_PATCH = do_PUT

    def _handle(self, method: str) -> None:
        parts = urlsplit(self.path)
        path = parts.path
        if self.headers.get("Host") not in self.console.hosts:
            self._reply_json(403, error_body("Forbidden", "the console answers only to its own address", "Host"))
            return
        if path.startswith(("/api/", "/console/")):
            refusal = self._cross_site_refusal()
            if refusal:
                self._reply_json(403, error_body("Forbidden", refusal, CONSOLE_HEADER))
                return
            body = self._json_body() if method in ("POST", "DELETE") else None
            if body is _UNREADABLE:
                return
            if path.startswith("/api/"):
                self._pass_on(method, path.removeprefix("/api"), parts.query, body)
            else:
                self._helper(method, path, body)
            return
        if method != "GET":
            self._reply_json(405, error_body("MethodNotAllowed", f"{method} {path}: pages are read with GET"))
        elif PAGES.match(path):
            self._reply_file(STATIC / "index.html")
        elif path.startswith("/static/"):
            self._static(path.removeprefix("/static/"))
        else:
            self._reply_json(404, error_body("NotFound", f"no page {path}", "path"))

    def _cross_site_refusal(self) -> str | None:
        if self.headers.get(CONSOLE_HEADER) != "1":
            return f"the console's own pages send {CONSOLE_HEADER}: 1 (another site's page cannot)"
        origin = self.headers.get("Origin")
        if origin is not None and origin != f"http://{self.headers.get('Host')}":
            return f"calls from {origin} are refused: only the console's own pages may call it"
        return None

    def _json_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self._reply_json(413, error_body("PayloadTooLarge", f"a body of at most {MAX_BODY_BYTES} bytes", "body"))
            return _UNREADABLE
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._reply_json(400, error_body("BadRequestBody", "the body must be a JSON object", "body"))
            return _UNREADABLE
        return body

    def _pass_on(self, method: str, path: str, query: str, body: dict[str, Any] | None) -> None:
        if not api_route_allowed(method, path):
            self._reply_json(404, error_body("NotFound", f"the console does not call {method} {path}", "path"))
            return
        headers = {name: value for name in FORWARDED_HEADERS if (value := self.headers.get(name))}
        try:
            answer = self.console.api.request(method, path, body, dict(parse_qsl(query)), headers or None)
        except StillInProgress as error:
            answer = error.response
        except ApiUnreachable as error:
            self._reply_json(502, error_body("ServiceUnreachable", str(error)))
            return
        self._reply_json(answer.status, answer.body, answer.headers.get("retry-after"))

    def _helper(self, method: str, path: str, body: dict[str, Any] | None) -> None:
        answer = helpers.answer(self.console.api, method, path, body or {})
        if answer is None:
            self._reply_json(404, error_body("NotFound", f"no console call {method} {path}", "path"))
            return
        status, reply = answer
        self._reply_json(status, reply)

    def _static(self, name: str) -> None:
        file = (STATIC / name).resolve()
        if not file.is_relative_to(STATIC.resolve()) or not file.is_file() or file.suffix not in CONTENT_TYPES:
            self._reply_json(404, error_body("NotFound", f"no asset {name}", "path"))
            return
        self._reply_file(file)

    def _reply_file(self, file: Path) -> None:
        self._reply(200, file.read_bytes(), CONTENT_TYPES[file.suffix] + "; charset=utf-8")

    def _reply_json(self, status: int, body: Any, retry_after: str | None = None) -> None:
        extra = {"Retry-After": retry_after} if retry_after else {}
        self._reply(status, json.dumps(body).encode(), "application/json", extra)

    def _reply(self, status: int, data: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status, HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else None)
        for name, value in (SECURITY_HEADERS | {"Content-Type": content_type} | (extra or {})).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)


# What _json_body answers when it has already refused the body.
_UNREADABLE = object()
