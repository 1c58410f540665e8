"""The outbox transaction handle: your SQL and mqlite's enqueue on one SQLite transaction."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from mqlite.types import OutMessage

if TYPE_CHECKING:
    from mqlite.engine.engine import Engine


class EngineTx:
    """Handed out by ``Engine.tx()``; valid only inside that ``with`` block."""

    def __init__(self, engine: Engine, conn: sqlite3.Connection) -> None:
        self._engine = engine
        self._conn = conn

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> sqlite3.Cursor:
        """Run your own statement on the same connection and transaction."""
        return self._conn.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> sqlite3.Cursor:
        return self._conn.executemany(sql, rows)

    def send(
        self, queue: str, messages: Sequence[OutMessage], ttl_ms: int | None = None
    ) -> list[int]:
        return self._engine.send(queue, messages, ttl_ms=ttl_ms)

    def send_one(self, queue: str, message: OutMessage, ttl_ms: int | None = None) -> int:
        return self._engine.send_one(queue, message, ttl_ms=ttl_ms)

    def schedule(
        self, queue: str, messages: Sequence[OutMessage], at_ms: int, ttl_ms: int | None = None
    ) -> list[int]:
        return self._engine.schedule(queue, messages, at_ms, ttl_ms=ttl_ms)
