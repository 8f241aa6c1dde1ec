"""The HTTP API on loopback: each request becomes an API Gateway REST proxy event for the api handler."""

from __future__ import annotations

import ipaddress
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from gpupilot.localcloud.gateway_event import proxy_event
from gpupilot.localcloud.http_body import BodyRefused, read_body
from gpupilot.localcloud.sigv4 import Refused, SigV4Verifier, identity_of

READ_TIMEOUT_SECONDS = 10  # a client that sends less than its Content-Length holds one thread this long, no more
LISTEN_BACKLOG = 128
ApiInvoker = Callable[[dict[str, Any]], dict[str, Any]]
# http.server's own refusals, made before a request reaches the API (a malformed request line, a request line
# or headers too long, too many headers), as (status, error, field) in the API's error shape. An HTTP version
# it does not speak is bad input like the rest: a 400, not its 505.
PROTOCOL_ERRORS = {
    400: (400, "BadRequest", "request"),
    414: (414, "URITooLong", "path"),
    431: (431, "RequestHeaderFieldsTooLarge", "headers"),
    505: (400, "BadRequest", "request"),
}


@dataclass(frozen=True)
class LocalRoute:
    """A route of the local cloud's own beside the API's (`/local/...`), served to loopback clients only (to anyone
    else it is no route at all): `answer(method, body)` is (status, JSON answer) for each of its `methods`."""

    methods: tuple[str, ...]
    answer: Callable[[str, bytes | None], tuple[int, dict[str, Any]]]


def allowed_methods(path: str) -> list[str] | None:
    """The methods the API serves on `path` (as API Gateway routes it), or None when no route matches."""
    from functions.shared.api.contract import ROUTES

    parts = path.rstrip("/").split("/") or [""]
    methods = [
        route.method
        for route in ROUTES
        if len(route.path.split("/")) == len(parts)
        and all(r == p or (r.startswith("{") and p) for r, p in zip(route.path.split("/"), parts, strict=True))
    ]
    return sorted(set(methods)) if methods else None


def _loopback(address: Any) -> bool:
    host = address[0] if isinstance(address, tuple) and address else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _handler_class(
    invoke: ApiInvoker, local_routes: dict[str, LocalRoute], verifier: SigV4Verifier | None = None
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "GpuPilotLocal/1"
        timeout = READ_TIMEOUT_SECONDS

        def log_message(self, format: str, *args: Any) -> None:
            return  # the product's console shows the product, not an access log

        def _serve(self) -> None:
            try:
                self._route()
            except TimeoutError:
                self.close_connection = True  # the body never came: nothing to answer on
            except Exception as error:  # never a traceback to the client; logged once with its request
                logging.getLogger("gpupilot.local").exception(
                    "local API request failed: %s %s", self.command, self.path
                )
                self._reply(500, {"error": "InternalError", "field": None, "message": type(error).__name__})

        def _route(self) -> None:
            path = urlsplit(self.path).path
            if path in local_routes and _loopback(self.client_address):
                self._serve_local(local_routes[path])
                return
            methods = allowed_methods(path)
            if methods is None:
                self._reply(404, {"error": "NotFound", "field": "path", "message": f"no route {path}"})
                return
            # HEAD is served wherever GET is (the same answer without its body), so Allow names it too.
            allow = ", ".join([*methods, *(["HEAD"] if "GET" in methods else []), "OPTIONS"])
            if self.command == "OPTIONS":
                self._reply(204, None, {"Allow": allow})
                return
            method = "GET" if self.command == "HEAD" else self.command
            if method not in methods:
                self._reply(405, {"error": "MethodNotAllowed", "field": "method",
                                  "message": f"{self.command} {path}: allowed {allow}"}, {"Allow": allow})  # fmt: skip
                return
            try:
                raw_body = read_body(self.rfile, self.headers)
            except BodyRefused as refused:
                self.close_connection = True
                self._reply(refused.status, {"error": refused.error, "field": refused.field,
                                             "message": refused.message})  # fmt: skip
                return
            principal = None
            if verifier is not None:
                try:
                    principal = verifier.verify(
                        self.command, self.path, self.headers.get("Host", ""), dict(self.headers.items()), raw_body
                    )
                except Refused as refused:
                    self._reply(403, {"error": refused.error, "field": None, "message": refused.message},
                                {"x-amzn-ErrorType": f"{refused.error}Exception"})  # fmt: skip
                    return
            body = raw_body.decode("utf-8", errors="replace") if raw_body else None
            identity = identity_of(principal, self.client_address[0], self.headers.get("User-Agent", ""))
            event = proxy_event(method, self.path, dict(self.headers.items()), body, identity)
            result = invoke(event)
            if "statusCode" not in result:
                self._reply(502, {"error": "BadGateway", "field": None, "message": str(result)[:500]})
                return
            self.send_response(int(result["statusCode"]))
            payload = (result.get("body") or "").encode()
            # API Gateway merges a proxy answer's multiValueHeaders (where Powertools puts Retry-After) into
            # its headers.
            multi = {
                name: ", ".join(map(str, values)) for name, values in (result.get("multiValueHeaders") or {}).items()
            }
            headers = {"Content-Type": "application/json"} | multi | dict(result.get("headers") or {})
            for name, value in headers.items():
                self.send_header(name, str(value))
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        def _serve_local(self, route: LocalRoute) -> None:
            if self.command not in route.methods:
                allow = ", ".join(route.methods)
                self._reply(405, {"error": "MethodNotAllowed", "field": "method",
                                  "message": f"{self.command}: allowed {allow}"}, {"Allow": allow})  # fmt: skip
                return
            try:
                raw_body = read_body(self.rfile, self.headers)
            except BodyRefused as refused:
                self.close_connection = True
                self._reply(refused.status, {"error": refused.error, "field": refused.field,
                                             "message": refused.message})  # fmt: skip
                return
            self._reply(*route.answer(self.command, raw_body))

        def parse_request(self) -> bool:
            if len(self.raw_requestline.split()) == 2:
                # HTTP/0.9 (`GET /jobs`: no version, and no headers to follow): http.server would go on to read
                # headers that never come, holding the connection until its read timeout. Refused at once.
                self.command, self.request_version = None, self.default_request_version  # type: ignore[assignment]
                self.requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
                self.send_error(400, "an HTTP/0.9 request line (no HTTP version): send HTTP/1.1")
                return False
            return bool(super().parse_request())

        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            """http.server's own refusals (malformed request line, headers too long or too many): the API's
            JSON error shape instead of its HTML page."""
            status, error, field = PROTOCOL_ERRORS.get(code, (code, HTTPStatus(code).phrase.replace(" ", ""), None))
            if self.request_version == "HTTP/0.9":
                # Set when the request line was unreadable; HTTP/0.9 answers have no status line or headers.
                self.request_version = self.protocol_version
            self.close_connection = True
            self._reply(status, {"error": error, "field": field, "message": message or HTTPStatus(code).phrase})

        def _reply(self, status: int, body: dict[str, Any] | None, headers: dict[str, str] | None = None) -> None:
            payload = json.dumps(body).encode() if body is not None else b""
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_HEAD = do_OPTIONS = _serve

        def __getattr__(self, name: str) -> Any:
            # Any other method (TRACE, CONNECT, made-up ones) is routed too: 405 with Allow, never an HTML 501.
            if name.startswith("do_"):
                return self._serve
            raise AttributeError(name)

    return Handler


# How often the serving loop looks for a shutdown request: stopping waits this long at most.
SHUTDOWN_POLL_SECONDS = 0.05


class ApiServer:
    """Serves the API on (host, port) in a background thread."""

    def __init__(
        self,
        host: str,
        port: int,
        invoke: ApiInvoker,
        local_routes: dict[str, LocalRoute] | None = None,
        verifier: SigV4Verifier | None = None,
    ) -> None:
        server_class = type("ApiHttpServer", (ThreadingHTTPServer,), {"request_queue_size": LISTEN_BACKLOG})
        self._server = server_class((host, port), _handler_class(invoke, dict(local_routes or {}), verifier))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS},
            name="gpupilot-api",
            daemon=True,
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
