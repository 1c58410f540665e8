"""The remote store's connection: a libSQL server (Turso, or a self-hosted ``sqld``) over
the libSQL remote protocol (Hrana over HTTP), through the ``libsql`` client from PyPI.

The engine is written against ``sqlite3.Connection``; this module makes a ``libsql``
connection behave like one where the engine relies on it, and fixes what the client does
differently (each found against a real sqld, pinned by ``tests/engine/test_remote_store.py``):

- **Named parameters** (``:now``) are refused by the client ("Expected a list or tuple"),
  and positional values are not bound to named slots by the server: each statement is
  rewritten once to numbered slots (``?1``) and the mapping passed as a list.
- **Integers outside 32 bits** are sent as REAL (``2**40`` arrives as ``1099511627776.0``;
  ``2**53 + 1`` loses its last bit). Every epoch-ms timestamp is such an integer, so those
  slots are rendered ``CAST(?N AS INTEGER)`` with the decimal text as the value: exact.
- **Errors** arrive as ``ValueError("Hrana: ...")``. They are re-raised as ``sqlite3``
  exceptions (``IntegrityError`` for a constraint, else ``OperationalError``) so the
  engine's one translation (``storage_errors.py``) sees a driver error as it does locally;
  a transport failure (connection refused/reset, HTTP error) is a ``RemoteUnreachable``.
- **A statement executed twice on one stream** can fail with ``SQLITE_INTERRUPT``
  (sqld 0.24.32: the second run of the claim's SELECT with three correlated ``EXISTS`` is
  "interrupted"; a fresh stream or a different text runs it). Each statement is sent
  with a unique trailing comment, so the server never reuses a cached prepared statement.
- The cursor is not iterable; ``RemoteCursor`` is.

Transactions: the client runs with ``isolation_level=None`` (the engine issues ``BEGIN
IMMEDIATE`` itself). After a transport failure the connection is dropped and a fresh one
is made on next use: a stream whose request may have been cut is never reused.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from mqlite import errors

# DSN schemes of a remote libSQL server: Turso's libsql:// (TLS), https://, and http://
# for a self-hosted sqld on a trusted network. ws(s):// is the legacy WebSocket Hrana.
REMOTE_SCHEMES = frozenset({"libsql", "http", "https"})
REFUSED_SCHEMES = frozenset({"ws", "wss"})
_INT32 = (-(2**31), 2**31 - 1)

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
    """The statement and positional values the client sends exactly (see module doc)."""
    pieces, keys = _slots(sql)
    if not keys:
        return sql, []
    index_of: dict[str | int, int] = {}
    wide: set[int] = set()
    values: list[Any] = []
    out = [pieces[0]]
    for key, piece in zip(keys, pieces[1:], strict=True):
        index = index_of.get(key)
        if index is None:
            value = params[key] if isinstance(key, str) else params[key - 1]  # type: ignore[call-overload,index]
            if isinstance(value, bool):
                value = int(value)
            values.append(value)
            index = index_of[key] = len(values)
            if isinstance(value, int) and not _INT32[0] <= value <= _INT32[1]:
                values[-1] = str(value)
                wide.add(index)
        out.append(f"CAST(?{index} AS INTEGER)" if index in wide else f"?{index}")
        out.append(piece)
    return "".join(out), values


def _translate(exc: ValueError) -> sqlite3.Error:
    text = str(exc)
    if "SQLITE_CONSTRAINT" in text:
        return sqlite3.IntegrityError(_message(text))
    if "SQLite error" in text or "SQL_INPUT_ERROR" in text or "ARGS_INVALID" in text:
        return sqlite3.OperationalError(_message(text))
    return RemoteUnreachable(_message(text))


def _message(text: str) -> str:
    m = re.search(r'message: "((?:[^"\\]|\\.)*)"', text)
    return m.group(1) if m else text.removeprefix("Hrana: ").strip("`")


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
    """A ``sqlite3.Connection`` look-alike over one libSQL client connection."""

    def __init__(self, target: RemoteTarget, auth_token: str) -> None:
        self.target = target
        self._auth_token = auth_token
        self._conn: Any = None
        self._sent = 0
        self.in_transaction = False

    def _client(self) -> Any:
        if self._conn is None:
            import libsql  # the remote store's own dependency: loaded only when used

            self._conn = libsql.connect(
                self.target.url, isolation_level=None, auth_token=self._auth_token
            )
        return self._conn

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> RemoteCursor:
        text, values = bind(sql, params)
        verb = sql.lstrip()[:8].upper()
        self._sent += 1
        try:
            cur = self._client().execute(f"{text}\n/* {self._sent} */", values)
            rows = cur.fetchall() if cur.description else []
        except ValueError as exc:
            failure = _translate(exc)
            if isinstance(failure, RemoteUnreachable):
                self.reset()
            raise failure from None
        if verb.startswith("BEGIN"):
            self.in_transaction = True
        elif verb.startswith(("COMMIT", "ROLLBACK", "END")) and not verb.startswith("ROLLBACK T"):
            self.in_transaction = False
        return RemoteCursor(list(rows), cur.rowcount, cur.lastrowid)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> RemoteCursor:
        total = 0
        last = None
        for row in rows:
            cur = self.execute(sql, row)
            total += max(cur.rowcount, 0)
            last = cur.lastrowid
        return RemoteCursor([], total, last)

    def reset(self) -> None:
        """Drop the client connection (its stream, and any transaction on it, is gone)."""
        conn, self._conn = self._conn, None
        self.in_transaction = False
        if conn is not None:
            with contextlib.suppress(Exception):  # a broken stream may fail to close
                conn.close()

    def close(self) -> None:
        self.reset()
