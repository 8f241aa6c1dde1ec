"""A tiny HTTP server on loopback that answers from a script: for testing what the client and the CLI do with
the API's answers (retries, errors) through real HTTP, without the local cloud."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


# Not an answer: the connection is reset (RST) once the request is read, as a proxy or a dying server does.
RESET = Answer(0, None)


def in_progress(retry_after: str | None = "0") -> Answer:
    """The API's answer while an earlier call with the same Idempotency-Key is still being processed."""
    body = {"error": "IN_PROGRESS", "field": "Idempotency-Key", "message": "still in progress"}
    return Answer(409, body, {"Retry-After": retry_after} if retry_after is not None else {})


class ScriptedApi:
    """Answers each request with the script's next answer (the last one again once the script is spent), and
    records every request it received."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> ScriptedApi:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self, received: Received) -> Answer:
        with self._lock:
            self.received.append(received)
            return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                received = Received(
                    self.command, self.path, dict(self.headers.items()), json.loads(raw) if raw else None
                )
                answer = api._next(received)
                if answer is RESET or answer.status == 0:
                    self.close_connection = True
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                    return
                payload = json.dumps(answer.body).encode()
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def finish(self) -> None:
                with contextlib.suppress(OSError, ValueError):  # a reset connection has nothing left to flush
                    super().finish()

            do_GET = do_POST = do_DELETE = _answer

        return Handler
