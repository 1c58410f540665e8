"""A small client of the libSQL server's HTTP API (Hrana 3 over HTTP, ``POST /v3/pipeline``)
on the standard library's sockets (``http1.HttpConnection``: one kept-alive connection).

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
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import msgspec

from mqlite.engine.http1 import HttpConnection, NotSent

# A kept-alive connection idle longer than this is replaced before the next request: a
# server or proxy may have closed it meanwhile, and a request lost on a closed connection
# would be a spurious transport error (an OutcomeUnknown, for a COMMIT).
_IDLE_REUSE_S = 4.0


class TransportError(OSError):
    """The exchange failed or was cut (connect, send, receive, timeout, a 5xx).

    ``sent`` is False when the request never reached the server whole (``NotSent``): the
    server ran nothing, and the stream (baton) is kept, so the same request may be sent
    again. True means the server may have run it (the answer was lost, or it was a 5xx)."""

    def __init__(self, message: str, *, sent: bool = True) -> None:
        super().__init__(message)
        self.sent = sent


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


# One statement of a batch: its SQL (numbered slots), its values, and whether its rows
# are wanted back (a write's are not: smaller answers).
Step = tuple[str, Sequence[Any], bool]


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
        self._http: HttpConnection | None = None
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
        outcome, autocommit = self._run({"type": "execute", "stmt": stmt}, keep_stream)
        if isinstance(outcome, StatementError):
            return outcome, autocommit
        return _result(outcome["result"]), autocommit

    def batch(
        self, sql: str, rows: Sequence[Sequence[Any]], *, keep_stream: bool
    ) -> tuple[Result | StatementError, bool]:
        """Run ``sql`` once per row in ONE round trip, each step only if the previous one
        succeeded (``executemany``: the rows before a failing one stay applied): the
        summed row count and the last rowid, or the failing step's error."""
        steps: list[dict[str, Any]] = []
        for i, args in enumerate(rows):
            step: dict[str, Any] = {
                "stmt": {"sql": sql, "args": [encode_value(v) for v in args], "want_rows": False}
            }
            if i:
                step["condition"] = {"type": "ok", "step": i - 1}
            steps.append(step)
        outcome, autocommit = self._run({"type": "batch", "batch": {"steps": steps}}, keep_stream)
        if isinstance(outcome, StatementError):
            return outcome, autocommit
        result = outcome["result"]
        for error in result.get("step_errors") or ():
            if error is not None:
                failure = StatementError(str(error.get("code", "")), str(error.get("message", "")))
                return failure, autocommit
        done = [_result(r) for r in result.get("step_results") or () if r is not None]
        return Result(
            columns=(),
            rows=[],
            affected=sum(r.affected for r in done),
            last_rowid=done[-1].last_rowid if done else None,
        ), autocommit

    def steps(
        self, steps: Sequence[Step], *, keep_stream: bool
    ) -> tuple[list[Result | StatementError | None], bool]:
        """Run ``steps`` in ONE round trip as a Hrana batch, each only if the one before it
        succeeded (a failing step stops the rest, as a raised exception would locally):
        per step its result, the server's error, or None (not run); and whether the
        stream is in autocommit after them (the pipelined transaction, ``remote.py``)."""
        batch: list[dict[str, Any]] = []
        for i, (sql, args, want_rows) in enumerate(steps):
            stmt = {"sql": sql, "args": [encode_value(v) for v in args], "want_rows": want_rows}
            step: dict[str, Any] = {"stmt": stmt}
            if i:
                step["condition"] = {"type": "ok", "step": i - 1}
            batch.append(step)
        outcome, autocommit = self._run({"type": "batch", "batch": {"steps": batch}}, keep_stream)
        if isinstance(outcome, StatementError):  # the whole batch was refused
            return [outcome] + [None] * (len(steps) - 1), autocommit
        result = outcome["result"]
        errors = result.get("step_errors") or ()
        results = result.get("step_results") or ()
        out: list[Result | StatementError | None] = []
        for i in range(len(steps)):
            error = errors[i] if i < len(errors) else None
            if error is not None:
                out.append(
                    StatementError(str(error.get("code", "")), str(error.get("message", "")))
                )
            elif i < len(results) and results[i] is not None:
                out.append(_result(results[i]))
            else:
                out.append(None)
        return out, autocommit

    def _run(
        self, request: dict[str, Any], keep_stream: bool
    ) -> tuple[dict[str, Any] | StatementError, bool]:
        """One request and the stream's autocommit state in one round trip."""
        requests: list[dict[str, Any]] = [request, {"type": "get_autocommit"}]
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
        response: dict[str, Any] = first["response"]
        return response, autocommit

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
        except NotSent as exc:
            self._close_http()  # the stream lives on: the request can go again with its baton
            raise TransportError(str(exc), sent=False) from exc
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

    def _connection(self) -> HttpConnection:
        if self._http is not None and (
            self._http.closed
            or time.monotonic() - self._used_at > _IDLE_REUSE_S
            or self._http.dropped()
        ):
            self._close_http()
        if self._http is None:
            self._http = HttpConnection(self._host, self._port, self._tls, self.timeout_s)
        return self._http

    def drop(self) -> None:
        """Forget the HTTP connection and the stream (after a failure: never reused)."""
        self.baton = None
        self._close_http()

    def _close_http(self) -> None:
        conn, self._http = self._http, None
        if conn is not None:
            conn.close()


def _result(result: dict[str, Any]) -> Result:
    last = result.get("last_insert_rowid")
    return Result(
        columns=tuple(c.get("name") or "" for c in result.get("cols", ())),
        rows=[tuple(decode_value(v) for v in row) for row in result.get("rows", ())],
        affected=int(result.get("affected_row_count") or 0),
        last_rowid=int(last) if last is not None else None,
    )
