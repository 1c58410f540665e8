"""A small client of the libSQL server's HTTP API (Hrana 3 over HTTP, ``POST /v3/pipeline``)
on the standard library's ``http.client``.

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
import http.client
import socket
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
        self._port = parts.port
        self._path = parts.path.rstrip("/") + "/v3/pipeline"
        self._headers = {"Content-Type": "application/json"}
        if auth_token:
            self._headers["Authorization"] = f"Bearer {auth_token}"
        self.timeout_s = timeout_s
        self._http: http.client.HTTPConnection | None = None
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
        conn = self._connection()
        try:
            conn.request("POST", self._path, body=body, headers=self._headers)
            response = conn.getresponse()
            data = response.read(_MAX_RESPONSE_BYTES + 1)
        except (OSError, http.client.HTTPException) as exc:
            self.drop()
            raise TransportError(f"{type(exc).__name__}: {exc}") from exc
        self._used_at = time.monotonic()
        if response.will_close:
            self._close_http()  # the stream (baton) lives on: it is not tied to a connection
        if response.status >= 500 or len(data) > _MAX_RESPONSE_BYTES:
            self.drop()
            raise TransportError(f"HTTP {response.status} from the server")
        if response.status != 200:
            self.baton = None  # a refused baton's stream is gone (or never was)
            raise RequestRefused(response.status, data[:300].decode("utf-8", "replace"))
        try:
            answer: dict[str, Any] = msgspec.json.decode(data)
        except msgspec.DecodeError as exc:
            self.drop()
            raise TransportError("the server's answer is not JSON") from exc
        return answer

    def _connection(self) -> http.client.HTTPConnection:
        if self._http is not None and time.monotonic() - self._used_at > _IDLE_REUSE_S:
            self._close_http()
        if self._http is None:
            cls = http.client.HTTPSConnection if self._tls else http.client.HTTPConnection
            self._http = cls(self._host, self._port, timeout=self.timeout_s)
            try:
                self._http.connect()
                self._http.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError as exc:
                self.drop()
                raise TransportError(f"{type(exc).__name__}: {exc}") from exc
        return self._http

    def drop(self) -> None:
        """Forget the HTTP connection and the stream (after a failure: never reused)."""
        self.baton = None
        self._close_http()

    def _close_http(self) -> None:
        conn, self._http = self._http, None
        if conn is not None:
            conn.close()
