"""A request body as API Gateway frames it for the local API: by Content-Length or chunked (RFC 9112, 6 and 7.1),
either framing's smuggling refused, over 1 MiB refused with 413 (read and discarded up to API Gateway's own 10 MB,
so that the client reads the answer)."""

from __future__ import annotations

from typing import Any

MAX_BODY_BYTES = 1024 * 1024
# API Gateway's own payload quota (REST APIs, 10 MB). A body over MAX_BODY_BYTES but within it is read and
# discarded before the 413, so that a client still sending it reads the answer instead of a broken pipe.
GATEWAY_MAX_BODY_BYTES = 10 * 1024 * 1024
DISCARD_READ_BYTES = 64 * 1024
MAX_CHUNK_LINE_BYTES = 4096  # a chunk's size line (with extensions) or a trailer line
MAX_TRAILER_LINES = 100


class BodyRefused(Exception):
    """A request body the server will not pass on: its status and the API's error shape."""

    def __init__(self, status: int, error: str, field: str, message: str) -> None:
        super().__init__(message)
        self.status, self.error, self.field, self.message = status, error, field, message


def too_large() -> BodyRefused:
    return BodyRefused(413, "PayloadTooLarge", "body", f"body over {MAX_BODY_BYTES // (1024 * 1024)} MiB")


class _Body:
    """One request's body on its connection: `rfile` the stream, `headers` the request's."""

    def __init__(self, rfile: Any, headers: Any) -> None:
        self.rfile, self.headers = rfile, headers

    def _read_body(self) -> bytes | None:
        coding = self.headers.get("Transfer-Encoding")
        if coding is not None:
            # Both framings at once is how requests are smuggled past a proxy (RFC 9112, 6.3): refused.
            if "Content-Length" in self.headers:
                raise BodyRefused(400, "BadRequest", "Transfer-Encoding", "both Transfer-Encoding and Content-Length")
            if coding.strip().lower() != "chunked":
                raise BodyRefused(400, "BadRequest", "Transfer-Encoding", f"only chunked is read, not {coding!r}")
            return self._read_chunked()
        lengths = {value.strip() for value in self.headers.get_all("Content-Length") or []}
        if len(lengths) > 1:
            # Two lengths: which one ends the body is how requests are smuggled past a proxy (RFC 9112, 6.3).
            said = ", ".join(sorted(lengths))
            raise BodyRefused(400, "BadRequest", "Content-Length", f"two different lengths: {said}")
        raw_length = lengths.pop() if lengths else "0"
        if not (raw_length.isascii() and raw_length.isdecimal()):
            raise BodyRefused(400, "BadRequest", "Content-Length", "not a length")
        # (Python refuses to read an integer of more than 4300 digits: no length that long is read.)
        length = int(raw_length) if len(raw_length) <= 20 else GATEWAY_MAX_BODY_BYTES + 1
        if length > MAX_BODY_BYTES:
            if length <= GATEWAY_MAX_BODY_BYTES:
                self._discard(length)
            raise too_large()
        return self._read_exactly(length) if length else None

    def _read_chunked(self) -> bytes:
        body = bytearray()
        received = 0
        while True:
            size = self._chunk_size()
            if size == 0:
                break
            received += size
            if received > GATEWAY_MAX_BODY_BYTES:
                raise too_large()
            if received > MAX_BODY_BYTES:
                body.clear()
                self._discard(size)
            else:
                body += self._read_exactly(size)
            if self.rfile.read(2) != b"\r\n":
                raise BodyRefused(400, "BadRequest", "body", "a chunk does not end with CRLF where its size says")
        for _ in range(MAX_TRAILER_LINES):  # trailer fields, read and ignored, up to the empty line
            if self._line() in (b"\r\n", b"\n", b""):
                break
        else:
            raise BodyRefused(400, "BadRequest", "body", "too many trailer fields")
        if received > MAX_BODY_BYTES:
            raise too_large()
        return bytes(body)

    def _chunk_size(self) -> int:
        size = self._line().split(b";", 1)[0].strip()  # chunk extensions are ignored
        if not size or len(size) > 16 or any(c not in b"0123456789abcdefABCDEF" for c in size):
            raise BodyRefused(400, "BadRequest", "body", "a chunked body with a malformed chunk size")
        return int(size, 16)

    def _line(self) -> bytes:
        line = self.rfile.readline(MAX_CHUNK_LINE_BYTES + 1)
        if len(line) > MAX_CHUNK_LINE_BYTES:
            raise BodyRefused(400, "BadRequest", "body", "a chunked body with a line too long")
        return bytes(line)

    def _read_exactly(self, length: int) -> bytes:
        data = self.rfile.read(length)
        if len(data) < length:
            raise BodyRefused(400, "BadRequest", "body", "the body ended before its length")
        return bytes(data)

    def _discard(self, length: int) -> None:
        while length > 0:
            data = self.rfile.read(min(length, DISCARD_READ_BYTES))
            if not data:
                return  # the client stopped sending: nobody to read the answer
            length -= len(data)

    # -- answers ---------------------------------------------------------------------------------------


def read_body(rfile: Any, headers: Any) -> bytes | None:
    """The request's body (None when it has none), or BodyRefused with the API's error shape."""
    return _Body(rfile, headers)._read_body()
