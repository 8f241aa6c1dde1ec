"""The HTTP API on loopback: each request becomes an API Gateway REST proxy event for the api handler."""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

MAX_BODY_BYTES = 1024 * 1024
READ_TIMEOUT_SECONDS = 10  # a client that sends less than its Content-Length holds one thread this long, no more
LISTEN_BACKLOG = 128
ApiInvoker = Callable[[dict[str, Any]], dict[str, Any]]


def allowed_methods(path: str) -> list[str] | None:
    """The methods the API serves on `path` (as API Gateway routes it), or None when no route matches."""
    from functions.shared.api_contract import ROUTES

    parts = path.rstrip("/").split("/") or [""]
    methods = [
        route.method
        for route in ROUTES
        if len(route.path.split("/")) == len(parts)
        and all(r == p or (r.startswith("{") and p) for r, p in zip(route.path.split("/"), parts, strict=True))
    ]
    return sorted(set(methods)) if methods else None


def proxy_event(method: str, raw_path: str, headers: dict[str, str], body: str | None) -> dict[str, Any]:
    """The event API Gateway (REST, Lambda proxy) would send for this request."""
    parts = urlsplit(raw_path)
    query = parse_qs(parts.query, keep_blank_values=True)
    # API Gateway hands the function URL-decoded paths; an encoded "/" stays inside its segment.
    path = "/".join(unquote(segment).replace("/", "%2F") for segment in parts.path.split("/"))
    return {
        "resource": path,
        "path": path,
        "httpMethod": method,
        "headers": headers,
        "multiValueHeaders": {k: [v] for k, v in headers.items()},
        "queryStringParameters": {k: v[-1] for k, v in query.items()} or None,
        "multiValueQueryStringParameters": query or None,
        "pathParameters": None,
        "stageVariables": None,
        "body": body,
        "isBase64Encoded": False,
        "requestContext": {
            "resourcePath": path,
            "httpMethod": method,
            "path": f"/local{path}",
            "stage": "local",
            "requestId": str(uuid.uuid4()),
            "identity": {"sourceIp": "127.0.0.1", "userAgent": headers.get("User-Agent", "")},
        },
    }


def _handler_class(invoke: ApiInvoker) -> type[BaseHTTPRequestHandler]:
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
            raw_length = self.headers.get("Content-Length") or "0"
            if not (raw_length.isascii() and raw_length.isdecimal()):
                self._reply(400, {"error": "BadRequest", "field": "Content-Length", "message": "not a length"})
                return
            length = int(raw_length)
            if length > MAX_BODY_BYTES:
                self._reply(413, {"error": "PayloadTooLarge", "field": "body", "message": "body over 1 MiB"})
                return
            body = self.rfile.read(length).decode("utf-8", errors="replace") if length else None
            event = proxy_event(method, self.path, dict(self.headers.items()), body)
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

    def __init__(self, host: str, port: int, invoke: ApiInvoker) -> None:
        server_class = type("ApiHttpServer", (ThreadingHTTPServer,), {"request_queue_size": LISTEN_BACKLOG})
        self._server = server_class((host, port), _handler_class(invoke))
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
