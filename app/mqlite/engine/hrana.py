"""A small client of the libSQL server's HTTP API (Hrana 3 over HTTP, ``POST /v3/pipeline``)
on the standard library's sockets (``_HttpConnection``: one kept-alive HTTP/1.1 connection).

Why not the ``libsql`` package from PyPI: its 0.1.11 client holds the GIL while it waits
on the network (a server that stops answering freezes every thread of the broker, and
no timeout can be set), sends integers outside 32 bits as REAL, refuses named
parameters, and raises every failure as ``ValueError``. The protocol itself is small and
JSON: this module speaks it directly, with

- a **socket timeout** on every connect, send and receive (``timeout_s``): a stalled
  server fails the call within it, and other threads run meanwhile;
- values **typed exactly**: integers travel as decimal strings (Hrana's ``integer``),
  blobs as base64, floats as JSON numbers;
- **errors kept apart**: a statement the server refused is a ``StatementError`` with the
  server's code (``SQLITE_CONSTRAINT``, ``SQLITE_BUSY``, ...), a refused request (4xx) a
  ``RequestRefused`` (nothing ran), and a transport failure or a 5xx an ``OSError``
  (``TransportError``; the request may or may not have been applied).

A *stream* is the server's connection: a pipeline without a baton opens one, the baton
of the answer continues it (a transaction lives on one stream), ``close`` ends it.
"""

from __future__ import annotations

import base64
import contextlib
import socket
import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import msgspec

_MAX_RESPONSE_BYTES = 256 * 1024 * 1024  # one pipeline's answer; the engine's reads are bounded
# A kept-alive connection idle longer than this is replaced before the next request: a
# server or proxy may have closed it meanwhile, and a request lost on a closed connection
# would be a spurious transport error (an OutcomeUnknown, for a COMMIT).
_IDLE_REUSE_S = 4.0
_MAX_LINE = 8192  # one line of an answer's head
_MAX_HEADERS = 100


class TransportError(OSError):
    """The exchange failed or was cut (connect, send, receive, timeout, a 5xx)."""


class RequestRefused(Exception):
    """The server refused the whole request (4xx: a bad baton, an invalid token): nothing
    of it ran."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class StatementError(Exception):
    """The server answered a statement with an error (``code``: e.g. ``SQLITE_CONSTRAINT``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Result:
    """One statement's answer: ``rows`` decoded to Python values; ``columns`` empty for a
    statement that returns no rows."""

    columns: tuple[str, ...]
    rows: list[tuple[Any, ...]]
    affected: int
    last_rowid: int | None


def encode_value(value: Any) -> dict[str, Any]:
    """A Python value as a Hrana value (``bool`` is an integer, as in ``sqlite3``)."""
    if value is None:
        return {"type": "null"}
    if isinstance(value, bool | int):
        return {"type": "integer", "value": str(int(value))}
    if isinstance(value, float):
        return {"type": "float", "value": value}
    if isinstance(value, str):
        return {"type": "text", "value": value}
    if isinstance(value, bytes | bytearray | memoryview):
        return {"type": "blob", "base64": base64.b64encode(bytes(value)).decode("ascii")}
    raise TypeError(f"type {type(value).__name__} is not supported as a SQL parameter")


def decode_value(value: dict[str, Any]) -> Any:
    kind = value["type"]
    if kind == "integer":
        return int(value["value"])
    if kind == "text":
        return value["value"]
    if kind == "float":
        return float(value["value"])
    if kind == "blob":
        data = value.get("base64", "")
        return base64.b64decode(data + "=" * (-len(data) % 4))
    return None


class HranaClient:
    """One HTTP connection (kept alive) to ``url`` and at most one open stream (a baton).

    Not thread-safe: the store's one writer serializes its callers."""

    def __init__(self, url: str, auth_token: str = "", *, timeout_s: float = 10.0) -> None:
        parts = urlsplit(url)
        self._tls = parts.scheme in ("https", "libsql")
        self._host = parts.hostname or ""
        self._port = parts.port or (443 if self._tls else 80)
        path = parts.path.rstrip("/") + "/v3/pipeline"
        host = self._host if parts.port is None else f"{self._host}:{parts.port}"
        head = f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        if auth_token:
            head += f"Authorization: Bearer {auth_token}\r\n"
        self._head = head.encode("ascii")  # + Content-Length per request
        self.timeout_s = timeout_s
        self._http: _HttpConnection | None = None
        self._used_at = 0.0  # time.monotonic() of the last answer on self._http
        self.baton: str | None = None

    def execute(
        self, sql: str, args: Sequence[Any], *, keep_stream: bool
    ) -> tuple[Result | StatementError, bool]:
        """Run one statement on the open stream (or a new one): its result or the server's
        error, and whether the stream is in autocommit after it (no transaction open).
        ``keep_stream``: keep the stream open (a transaction), else close it in the same
        round trip."""
        stmt = {"sql": sql, "args": [encode_value(v) for v in args], "want_rows": True}
        requests: list[dict[str, Any]] = [
            {"type": "execute", "stmt": stmt},
            {"type": "get_autocommit"},
        ]
        if not keep_stream:
            requests.append({"type": "close"})
        answer = self._pipeline(requests)
        self.baton = answer.get("baton") if keep_stream else None
        results = answer.get("results") or []
        if len(results) < 2:
            self.drop()
            raise TransportError("the server's answer is incomplete")
        auto = results[1]
        autocommit = not keep_stream or (
            auto.get("type") == "ok" and bool(auto["response"].get("is_autocommit", True))
        )
        first = results[0]
        if first.get("type") != "ok":
            error = first.get("error") or {}
            failure = StatementError(str(error.get("code", "")), str(error.get("message", "")))
            return failure, autocommit
        result = first["response"]["result"]
        last = result.get("last_insert_rowid")
        return Result(
            columns=tuple(c.get("name") or "" for c in result.get("cols", ())),
            rows=[tuple(decode_value(v) for v in row) for row in result.get("rows", ())],
            affected=int(result.get("affected_row_count") or 0),
            last_rowid=int(last) if last is not None else None,
        ), autocommit

    def close_stream(self) -> None:
        """End the open stream (best effort: an abandoned stream expires on the server)."""
        baton, self.baton = self.baton, None
        if baton is not None:
            with contextlib.suppress(OSError, RequestRefused):
                self._pipeline([{"type": "close"}], baton=baton)

    def _pipeline(
        self, requests: list[dict[str, Any]], *, baton: str | None = None
    ) -> dict[str, Any]:
        body = msgspec.json.encode({"baton": baton or self.baton, "requests": requests})
        try:
            conn = self._connection()
            status, data = conn.post(self._head, body)
        except (OSError, ValueError) as exc:
            self.drop()
            raise TransportError(f"{type(exc).__name__}: {exc}") from exc
        self._used_at = time.monotonic()
        if conn.closed:  # the server said Connection: close; the stream (baton) lives on
            self._close_http()
        if status >= 500:
            self.drop()
            raise TransportError(f"HTTP {status} from the server")
        if status != 200:
            self.baton = None  # a refused baton's stream is gone (or never was)
            raise RequestRefused(status, data[:300].decode("utf-8", "replace"))
        try:
            answer: dict[str, Any] = msgspec.json.decode(data)
        except msgspec.DecodeError as exc:
            self.drop()
            raise TransportError("the server's answer is not JSON") from exc
        return answer

    def _connection(self) -> _HttpConnection:
        if self._http is not None and (
            self._http.closed or time.monotonic() - self._used_at > _IDLE_REUSE_S
        ):
            self._close_http()
        if self._http is None:
            self._http = _HttpConnection(self._host, self._port, self._tls, self.timeout_s)
        return self._http

    def drop(self) -> None:
        """Forget the HTTP connection and the stream (after a failure: never reused)."""
        self.baton = None
        self._close_http()

    def _close_http(self) -> None:
        conn, self._http = self._http, None
        if conn is not None:
            conn.close()


class _HttpConnection:
    """One kept-alive HTTP/1.1 connection. Why not ``http.client``: it sends a request's
    head and body in two writes and parses the answer's head with ``email.parser``, about
    a third of the client's time per statement (measured by tests/bench/remote_bench.py);
    this sends each request in one write and reads only what Hrana answers need
    (``Content-Length`` or chunked bodies, ``Connection: close``), every read bounded."""

    def __init__(self, host: str, port: int, tls: bool, timeout_s: float) -> None:
        sock = socket.create_connection((host, port), timeout=timeout_s)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if tls:
                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self._file = sock.makefile("rb")
        self.closed = False

    def post(self, head: bytes, body: bytes) -> tuple[int, bytes]:
        self._sock.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        status_line = self._line()
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise ValueError(f"not an HTTP answer: {status_line[:80]!r}")
        status = int(parts[1])
        length: int | None = None
        chunked = False
        for _ in range(_MAX_HEADERS):
            line = self._line()
            if line in (b"\r\n", b"\n"):
                break
            name, _, value = line.partition(b":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                chunked = b"chunked" in value
            elif name == b"connection" and value == b"close":
                self.closed = True
        else:
            raise ValueError("the answer's head has too many lines")
        if chunked:
            return status, self._chunks()
        if length is None:
            self.closed = True
            return status, self._exactly(-1)
        return status, self._exactly(length)

    def _line(self) -> bytes:
        line = self._file.readline(_MAX_LINE + 1)
        if not line:
            raise ConnectionResetError("the server closed the connection")
        if len(line) > _MAX_LINE:
            raise ValueError("a line of the answer's head is too long")
        return line

    def _exactly(self, length: int) -> bytes:
        if length > _MAX_RESPONSE_BYTES:
            raise ValueError(f"an answer of {length} bytes is over the limit")
        if length < 0:
            data = self._file.read(_MAX_RESPONSE_BYTES + 1)
            if len(data) > _MAX_RESPONSE_BYTES:
                raise ValueError("the answer is over the limit")
            return data
        data = self._file.read(length)
        if len(data) < length:
            raise ConnectionResetError("the answer was cut")
        return data

    def _chunks(self) -> bytes:
        out = bytearray()
        while size := int(self._line().split(b";", 1)[0], 16):
            out += self._exactly(size)
            self._line()  # the CRLF after each chunk
            if len(out) > _MAX_RESPONSE_BYTES:
                raise ValueError("the answer is over the limit")
        while self._line() not in (b"\r\n", b"\n"):
            pass  # trailers
        return bytes(out)

    def close(self) -> None:
        self.closed = True
        self._file.close()
        self._sock.close()
