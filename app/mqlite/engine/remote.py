"""The remote store's connection: a libSQL server (Turso, or a self-hosted ``sqld``) over
its HTTP API (Hrana), through our own small client (``hrana.py``: stdlib ``http.client``
with socket timeouts, values typed exactly).

The engine is written against ``sqlite3.Connection``; ``RemoteConnection`` behaves like one
where the engine relies on it (``execute``/``executemany``, a cursor with ``fetchone``/
``fetchall``/``rowcount``/``lastrowid``, iteration, ``in_transaction``):

- **Parameters**: sqld refuses a named argument the statement does not use (the engine
  passes ``sqlite3``-style mappings with spare keys), so each statement is rewritten once
  to numbered slots (``?1``) and only the values it uses are sent, integers as exact
  decimal strings (64-bit, never REAL).
- **Streams**: a statement outside a transaction runs on a fresh stream closed in the same
  round trip (nothing idles on the server); ``BEGIN`` keeps the stream (its baton) for the
  whole transaction, and ``COMMIT``/``ROLLBACK`` closes it. ``in_transaction`` is the
  server's own answer (``get_autocommit``, in the same round trip), so a statement that
  ended the transaction on the server (a failed COMMIT) is seen as such.
- **Errors** are raised as ``sqlite3`` exceptions so the engine's one translation
  (``storage_errors.py``) sees a driver error as it does locally: ``IntegrityError`` for a
  constraint, else ``OperationalError`` with the server's result code; a transport
  failure (refused, reset, timed out, a 5xx) is ``RemoteUnreachable`` (the request may or
  may not have been applied), and the stream and its transaction are gone.
- **A lost transaction** (the exchange of a statement inside one was cut, or the server
  no longer knows the stream: it restarted) is ``TransactionLost``, and from then on the
  connection refuses every statement, unsent, until the caller's ``rollback()`` (or a
  ``ROLLBACK``, or a ``BEGIN``): a later ``SAVEPOINT`` would otherwise open a new
  transaction on a fresh stream and its ``RELEASE`` commit part of the caller's work
  alone (issue 26).
- **Retries** (the remote store is the only one that retries: docs/architecture.md, "One
  writer"), bounded by
  ``defaults.REMOTE_RETRY_BACKOFF_S`` and the first attempt's timeout, and only where they
  cannot apply anything twice: any request that never reached the server whole (the
  connect or the write failed: ``TransportError.sent`` is False; a transaction's stream
  survives it), and, when the answer was lost or was a 5xx, a ``SELECT`` or ``BEGIN``
  outside a transaction (a fresh stream: nothing to apply twice). Never a lost answer of
  a write, of a statement inside a transaction, or of a ``COMMIT`` (the store makes that
  ``OutcomeUnknown``). ``retries`` counts the attempts, for the observation. Once a call
  spent its retries on refused connections, calls fail at once without retrying for
  ``defaults.REMOTE_FAIL_FAST_S`` (the server is down: callers in line on the writer
  would each wait the whole backoff).
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from mqlite import defaults, errors
from mqlite.engine.hrana import (
    HranaClient,
    RequestRefused,
    Result,
    StatementError,
    TransportError,
)

# DSN schemes of a remote libSQL server (defaults.REMOTE_DB_SCHEMES); ws(s):// is the
# legacy WebSocket Hrana, refused with a message.
REMOTE_SCHEMES = frozenset(defaults.REMOTE_DB_SCHEMES)
REFUSED_SCHEMES = frozenset({"ws", "wss"})
# Primary result codes (sqlite.org/rescode.html) of the server's error names, so the
# engine classifies a remote failure as a local one (busy, full, io, corrupt, ...).
_RESULT_CODES = {
    "SQLITE_PERM": 3,
    "SQLITE_BUSY": 5,
    "SQLITE_LOCKED": 6,
    "SQLITE_READONLY": 8,
    "SQLITE_INTERRUPT": 9,
    "SQLITE_IOERR": 10,
    "SQLITE_CORRUPT": 11,
    "SQLITE_FULL": 13,
    "SQLITE_CANTOPEN": 14,
    "SQLITE_NOTADB": 26,
}

# A single-quoted string, a double-quoted identifier, a comment, or a parameter slot.
_TOKENS = re.compile(
    r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/"
    r"|(?P<named>[:@$][A-Za-z_][A-Za-z0-9_]*)|(?P<num>\?\d+)|(?P<pos>\?)",
    re.S,
)


class RemoteUnreachable(sqlite3.OperationalError):
    """The remote database could not be reached, or the exchange was cut (the request
    may or may not have been applied)."""

    sqlite_errorcode = 10  # SQLITE_IOERR: classified as an ``io`` storage failure


class TransactionLost(RemoteUnreachable):
    """The stream's transaction is gone (its exchange was cut, or the server restarted):
    nothing of it committed, and nothing more runs until ``rollback()``."""


class ResultTooLarge(sqlite3.OperationalError):
    """The server refused to send a statement's result over its response limit (sqld:
    ``--max-response-size``, 10 MiB by default): a read that may ask again for fewer rows
    (Peek does, ``peek.py``)."""


@dataclass(frozen=True, slots=True)
class RemoteTarget:
    url: str  # as given to the client (no query string: an authToken there is refused)
    masked: str  # what Status/Observe/logs show: the host's first label hidden


def is_remote(dsn: str) -> bool:
    text = (dsn or "").strip()
    return "://" in text and text.split("://", 1)[0].lower() in REMOTE_SCHEMES | REFUSED_SCHEMES


def parse_remote(dsn: str) -> RemoteTarget:
    """``libsql://host``, ``https://host[:port]``, ``http://host:port``; credentials in the
    URL are refused (the token comes from MQLITE_DB_AUTH_TOKEN only, never a logged URL)."""
    parts = urlsplit(dsn.strip())
    scheme = parts.scheme.lower()
    if scheme in REFUSED_SCHEMES:
        raise errors.InvalidArgument(
            f"database URL scheme {scheme}:// (WebSocket Hrana) is not supported: "
            "use libsql://, https:// or http://"
        )
    if not parts.hostname:
        raise errors.InvalidArgument(f"database URL {scheme}:// names no host")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise errors.InvalidArgument(
            "database URL must not carry credentials or a query string: "
            "pass the token in MQLITE_DB_AUTH_TOKEN"
        )
    try:
        port = parts.port
    except ValueError as exc:
        raise errors.InvalidArgument("database URL has an invalid port") from exc
    host = parts.hostname
    suffix = f":{port}" if port else ""
    labels = host.split(".")
    shown = (
        "***"
        if len(labels) < 3 or host.replace(".", "").isdigit()
        else "***." + ".".join(labels[1:])
    )
    path = parts.path.rstrip("/")
    return RemoteTarget(f"{scheme}://{parts.netloc}{path}", f"{scheme}://{shown}{suffix}")


@lru_cache(maxsize=4096)
def _slots(sql: str) -> tuple[tuple[str, ...], tuple[str | int, ...]]:
    """``sql`` split around its parameter slots: (text pieces, slot keys); a key is the
    name of a named slot or the 1-based index of a positional one."""
    pieces: list[str] = []
    keys: list[str | int] = []
    last, next_pos = 0, 1
    for m in _TOKENS.finditer(sql):
        kind = m.lastgroup
        if kind is None:
            continue  # a literal or comment: kept as is
        pieces.append(sql[last : m.start()])
        last = m.end()
        if kind == "named":
            keys.append(m.group()[1:])
        elif kind == "num":
            keys.append(int(m.group()[1:]))
            next_pos = int(m.group()[1:]) + 1
        else:
            keys.append(next_pos)
            next_pos += 1
    pieces.append(sql[last:])
    return tuple(pieces), tuple(keys)


def bind(sql: str, params: Sequence[Any] | Mapping[str, Any]) -> tuple[str, list[Any]]:
    """The statement with numbered slots and the values it uses, in order (module doc)."""
    pieces, keys = _slots(sql)
    if not keys:
        return sql, []
    index_of: dict[str | int, int] = {}
    values: list[Any] = []
    out = [pieces[0]]
    for key, piece in zip(keys, pieces[1:], strict=True):
        index = index_of.get(key)
        if index is None:
            value = params[key] if isinstance(key, str) else params[key - 1]  # type: ignore[call-overload,index]
            values.append(value)
            index = index_of[key] = len(values)
        out.append(f"?{index}")
        out.append(piece)
    return "".join(out), values


def _backoff(attempt: int) -> float | None:
    """The pause before retry number ``attempt + 1``, or None once they are spent."""
    pauses = defaults.REMOTE_RETRY_BACKOFF_S
    return pauses[attempt] if attempt < len(pauses) else None


def _translate(failure: StatementError) -> sqlite3.Error:
    """The server's statement error as the ``sqlite3`` exception a local file raises."""
    code = failure.code
    exc: sqlite3.Error
    if "Response is too large" in str(failure):
        exc = ResultTooLarge(f"the result is over the server's response limit: {failure}")
    elif code.startswith("SQLITE_CONSTRAINT"):
        exc = sqlite3.IntegrityError(str(failure).removeprefix("SQLite error: "))
    else:
        exc = sqlite3.OperationalError(str(failure).removeprefix("SQLite error: "))
    primary = next(
        (n for name, n in _RESULT_CODES.items() if code == name or code.startswith(name + "_")),
        None,
    )
    if primary is not None:
        exc.sqlite_errorcode = primary
        exc.sqlite_errorname = code
    return exc


class RemoteCursor:
    """The rows of one statement, fetched eagerly (the client buffers them anyway)."""

    __slots__ = ("_rows", "lastrowid", "rowcount")

    def __init__(self, rows: list[tuple[Any, ...]], rowcount: int, lastrowid: int | None) -> None:
        self._rows = rows
        self.rowcount = rowcount
        self.lastrowid = lastrowid

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows.pop(0) if self._rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._rows = self._rows, []
        return rows

    def fetchmany(self, size: int = 1) -> list[tuple[Any, ...]]:
        rows, self._rows = self._rows[:size], self._rows[size:]
        return rows

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.fetchall())

    def close(self) -> None:
        self._rows = []


class RemoteConnection:
    """A ``sqlite3.Connection`` look-alike over one HTTP connection to the server."""

    def __init__(
        self,
        target: RemoteTarget,
        auth_token: str,
        *,
        timeout_s: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.target = target
        self._sleep = sleep  # the retries' pause (a test substitutes its own)
        self._monotonic = monotonic
        self._fail_fast_until = 0.0  # no retries of unsent requests before this
        self.retries = 0  # safe retry attempts so far (measured_store reads the delta)
        self._auth_token = auth_token  # never logged, never in a message
        if timeout_s is None:
            timeout_s = defaults.REMOTE_TIMEOUT_S  # read at open: a test may shorten it
        self._timeout_s = timeout_s
        self._client = HranaClient(target.url, auth_token, timeout_s=timeout_s)
        self._pid = os.getpid()
        self.in_transaction = False
        self._lost = False  # a transaction was lost: refuse statements until rollback()

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> RemoteCursor:
        text, values = bind(sql, params)
        outcome = self._send(sql, lambda keep: self._client.execute(text, values, keep_stream=keep))
        rowcount = -1 if outcome.columns else outcome.affected
        return RemoteCursor(outcome.rows, rowcount, outcome.last_rowid)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> RemoteCursor:
        """Every row in one round trip (a Hrana batch whose steps run while they succeed)."""
        bound = [bind(sql, row) for row in rows]
        if not bound:
            return RemoteCursor([], 0, None)
        text = bound[0][0]
        values = [v for _, v in bound]
        outcome = self._send(sql, lambda keep: self._client.batch(text, values, keep_stream=keep))
        return RemoteCursor([], outcome.affected, outcome.last_rowid)

    def _send(
        self, sql: str, call: Callable[[bool], tuple[Result | StatementError, bool]]
    ) -> Result:
        """Run ``call`` on the right stream (module doc) and map its failures."""
        if self._pid != os.getpid():  # a forked child never reuses the parent's exchange
            self._client = HranaClient(self.target.url, self._auth_token, timeout_s=self._timeout_s)
            self._pid, self.in_transaction = os.getpid(), False
        verb = sql.lstrip()[:12].upper()
        ends = verb.startswith(("COMMIT", "END", "ROLLBACK")) and not verb.startswith("ROLLBACK TO")
        if self._lost:
            if ends and verb.startswith("ROLLBACK"):
                self._lost = False  # nothing on the server to roll back
                return Result((), [], 0, None)
            if not verb.startswith("BEGIN"):
                raise TransactionLost(
                    f"remote database {self.target.masked}: the transaction was lost with "
                    "its stream; nothing of it committed"
                )
            self._lost = False
        keep = verb.startswith(("BEGIN", "SAVEPOINT")) or (self.in_transaction and not ends)
        # A lost answer may be retried only where running it twice changes nothing.
        idempotent = not self.in_transaction and verb.startswith(("SELECT", "BEGIN"))
        deadline = self._monotonic() + self._timeout_s
        attempt = 0
        while True:
            try:
                outcome, autocommit = call(keep)
                self._fail_fast_until = 0.0
                break
            except TransportError as exc:
                now = self._monotonic()
                pause = None if now < self._fail_fast_until else _backoff(attempt)
                safe = idempotent or not exc.sent
                if not safe or pause is None or now + pause > deadline:
                    if not exc.sent and attempt:  # the retries met a server that is down
                        self._fail_fast_until = now + defaults.REMOTE_FAIL_FAST_S
                    lost, self._lost = self.in_transaction, self.in_transaction
                    self.in_transaction = False
                    self._client.drop()  # a stream whose fate is unknown is never reused
                    unreachable = TransactionLost if lost and not ends else RemoteUnreachable
                    raise unreachable(f"remote database {self.target.masked}: {exc}") from None
                attempt += 1
                self.retries += 1
                self._sleep(pause)
            except RequestRefused as exc:
                # The stream is a baton the server no longer knows: its transaction is gone.
                lost, self._lost = self.in_transaction, self.in_transaction
                self.in_transaction = False
                message = f"remote database {self.target.masked}: {exc}"
                refused: sqlite3.OperationalError
                if exc.status in (401, 403):
                    refused = sqlite3.OperationalError(message)
                    refused.sqlite_errorcode = 3  # SQLITE_PERM: an "io" storage failure
                elif lost:
                    refused = TransactionLost(f"{message}; the transaction is gone")
                else:
                    refused = sqlite3.OperationalError(message)
                raise refused from None
        self.in_transaction = not autocommit
        if isinstance(outcome, StatementError):
            raise _translate(outcome) from None
        return outcome

    def commit(self) -> None:
        """Nothing is pending: outside ``BEGIN`` every statement commits on its own (what a
        ``sqlite3`` caller's ``commit()`` expects after its writes)."""

    def rollback(self) -> None:
        """End the transaction: ``ROLLBACK`` on its stream, or, when it was lost, forget it
        (the server has nothing to roll back), as ``sqlite3``'s does with none open."""
        if self.in_transaction:
            self.execute("ROLLBACK")
        self._lost = False

    def reset(self) -> None:
        """Drop the HTTP connection and the stream (any transaction on it is gone)."""
        self._client.close_stream()
        self._client.drop()
        self.in_transaction = self._lost = False

    def close(self) -> None:
        self.reset()
