"""The HTTP API on loopback: each request becomes an API Gateway REST proxy event for the api handler."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

MAX_BODY_BYTES = 1024 * 1024
ApiInvoker = Callable[[dict[str, Any]], dict[str, Any]]


def proxy_event(method: str, raw_path: str, headers: dict[str, str], body: str | None) -> dict[str, Any]:
    """The event API Gateway (REST, Lambda proxy) would send for this request."""
    parts = urlsplit(raw_path)
    query = parse_qs(parts.query, keep_blank_values=True)
    return {
        "resource": parts.path,
        "path": parts.path,
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
            "resourcePath": parts.path,
            "httpMethod": method,
            "path": f"/local{parts.path}",
            "stage": "local",
            "requestId": str(uuid.uuid4()),
            "identity": {"sourceIp": "127.0.0.1", "userAgent": headers.get("User-Agent", "")},
        },
    }


def _handler_class(invoke: ApiInvoker) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "GpuPilotLocal/1"

        def log_message(self, format: str, *args: Any) -> None:
            return  # the product's console shows the product, not an access log

        def _serve(self) -> None:
            raw_length = self.headers.get("Content-Length") or "0"
            if not (raw_length.isascii() and raw_length.isdecimal()):
                self._reply(400, {"error": "BadRequest", "field": "Content-Length", "message": "not a length"})
                return
            length = int(raw_length)
            if length > MAX_BODY_BYTES:
                self._reply(413, {"error": "PayloadTooLarge", "field": "body", "message": "body over 1 MiB"})
                return
            body = self.rfile.read(length).decode("utf-8", errors="replace") if length else None
            event = proxy_event(self.command, self.path, dict(self.headers.items()), body)
            result = invoke(event)
            if "statusCode" not in result:
                self._reply(502, {"error": "BadGateway", "field": None, "message": str(result)[:500]})
                return
            self.send_response(int(result["statusCode"]))
            payload = (result.get("body") or "").encode()
            for name, value in (result.get("headers") or {}).items():
                self.send_header(name, str(value))
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _reply(self, status: int, body: dict[str, Any]) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = _serve

    return Handler


class ApiServer:
    """Serves the API on (host, port) in a background thread."""

    def __init__(self, host: str, port: int, invoke: ApiInvoker) -> None:
        self._server = ThreadingHTTPServer((host, port), _handler_class(invoke))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="gpupilot-api", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
