"""The transaction handle of ``Engine.tx()``: your SQL, mqlite's sends AND settlements of
received messages, all on one SQLite transaction (the outbox and the inbox).

Settling inside the block closes the consumer's dual-write gap: a handler's business rows,
the messages it sends on, and the completion of the message it processed commit together
or not at all, so a crash can never leave "processed but not completed" (processed twice)
or "completed but not processed" (lost). The lease fence still holds: a settlement whose
lease expired or belongs to someone else raises ``LockLost`` AND dooms the block -- it
rolls back at its end even if the caller caught the error, because committing the
business writes of a message it no longer owns would be the very double processing the
block exists to prevent. Receipts are written in the same transaction, so an exact replay
of a committed settlement (a retry after a crash) is recognised.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from mqlite import errors
from mqlite.engine import diagnostics
from mqlite.types import BatchResult, Message, OutMessage

if TYPE_CHECKING:
    from mqlite.engine.messaging import Messaging


class EngineTx:
    """Handed out by ``Engine.tx()``; valid only inside that ``with`` block."""

    def __init__(self, engine: Messaging, conn: sqlite3.Connection) -> None:
        self._engine = engine
        self._conn = conn
        self.doomed: errors.LockLost | None = None  # set by a refused settlement

    # -- your SQL ---------------------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> sqlite3.Cursor:
        """Run your own statement on the same connection and transaction."""
        try:
            return self._conn.execute(sql, params)
        except sqlite3.Error as exc:
            diagnostics.mark_application(exc)  # logged as yours, not a storage failure
            raise

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> sqlite3.Cursor:
        try:
            return self._conn.executemany(sql, rows)
        except sqlite3.Error as exc:
            diagnostics.mark_application(exc)
            raise

    # -- the outbox ---------------------------------------------------------------------------

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

    # -- the inbox: settle received messages in the same transaction -----------------------

    def complete(self, message: Message) -> None:
        """Complete ``message`` when (and only when) the block commits."""
        q, seq, token = _lease(message)
        self._fenced(self._engine.complete, q, seq, token)

    def abandon(self, message: Message, delay_ms: int = 0, error: str = "") -> None:
        q, seq, token = _lease(message)
        self._fenced(self._engine.abandon, q, seq, token, delay_ms, error)

    def reject(self, message: Message, reason: str = "", description: str = "") -> None:
        """Dead-letter ``message`` with ``reason`` when the block commits."""
        q, seq, token = _lease(message)
        self._fenced(self._engine.reject, q, seq, token, reason, description)

    def defer(self, message: Message) -> None:
        q, seq, token = _lease(message)
        self._fenced(self._engine.defer, q, seq, token)

    def complete_batch(self, messages: Sequence[Message]) -> list[BatchResult]:
        """Complete every message of one queue, all or nothing: inside a transaction a
        stale item dooms the block (``LockLost``) instead of being skipped."""
        leases = [_lease(m) for m in messages]
        queues = {q for q, _, _ in leases}
        if len(queues) > 1:
            raise errors.InvalidArgument("complete_batch settles messages of one queue")
        if not leases:
            return []
        (queue,) = queues
        results = self._engine.complete_batch(queue, [(s, t) for _, s, t in leases])
        lost = [r.seq_number for r in results if not r.ok]
        if lost:
            self._doom(errors.LockLost(f"lock lost on message(s) {lost} in {queue!r}"))
        return results

    def _fenced(self, verb: Any, *args: Any) -> None:
        try:
            verb(*args)
        except errors.LockLost as exc:
            self._doom(exc)

    def _doom(self, exc: errors.LockLost) -> None:
        if self.doomed is None:
            self.doomed = exc
        raise exc


def _lease(message: Message) -> tuple[str, int, str]:
    if not isinstance(message, Message):
        raise errors.InvalidArgument("settle a Message received from this client")
    if not message.lock_token:
        raise errors.InvalidArgument(
            "this message holds no lock to settle (peeked or receive-and-delete)"
        )
    return message.queue, message.seq_number, message.lock_token
