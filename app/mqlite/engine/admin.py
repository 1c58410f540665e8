"""Browse, DLQ operations and the status snapshot (the maintenance passes are in
``maintenance_ops.py``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TypedDict

from mqlite import errors
from mqlite.engine import audit, dlq, peek
from mqlite.engine.audit import Actor
from mqlite.engine.core import serialized
from mqlite.engine.part import Part
from mqlite.engine.store import SCHEMA_VERSION
from mqlite.engine.validate import check_int
from mqlite.types import Message, Stats


class StatusSnapshot(TypedDict):
    """``status()``: what the Status answer holds of the engine (typed, so a transport
    building its response from it is checked field by field)."""

    backend: str
    remote: bool
    location: str
    schema_version: str
    ping_ms: int
    db_size_bytes: int
    queues: int
    subscriptions: int


STATUS_COUNTS_SQL = """
SELECT (SELECT count(*) FROM queues WHERE kind = 'queue'), (SELECT count(*) FROM subscriptions)
"""


class Admin(Part):
    """Peek / stats / redrive / purge / maintenance / outbox transactions."""

    # -- browse ---------------------------------------------------------------------------

    def peek(
        self,
        queue: str,
        state: str | None = None,
        from_seq: int = 0,
        max: int = 0,
    ) -> list[Message]:
        """Browse without locking (never returns a lock token); on the replica if any."""
        q = self._queue(queue)
        check_int("from_seq", from_seq)
        check_int("max", max)
        if state is not None and not isinstance(state, str):
            raise errors.InvalidArgument("state must be a string")
        found = self._read_stale(
            lambda conn: peek.peek(conn, q.name, state=state or None, from_seq=from_seq, max=max)
        )
        return self._bind(found)

    def stats(self, queue: str) -> Stats:
        """Counts per state (on the replica if any); ``now`` sampled once the read runs."""
        q = self._queue(queue)
        return self._read_stale(lambda conn: peek.stats(conn, self.clock.now_ms(), q.name))

    # -- dead letters ---------------------------------------------------------------------

    def redrive(
        self,
        queue: str,
        target: str | None = None,
        max: int = 0,
        older_than_ms: int = 0,
        rate_per_sec: int = 0,
        seq_numbers: Sequence[int] = (),
    ) -> int:
        """Move dead letters back to active here, or into ``target``; returns moved count.
        ``seq_numbers`` (at most ``MAX_DLQ_SELECTION``) narrows it to those dead letters.

        Chunks of at most ``dlq.CHUNK_ROWS``, each its own transaction, so other work runs
        between them; with ``rate_per_sec`` > 0 one second's worth, then a pause (on the
        engine clock, waiting on the CALLER's thread, never while holding the writer), so
        a big redrive never starves consumers. Interrupted, what moved stays moved.
        """
        self._queue(queue)
        for name, value in (
            ("max", max),
            ("older_than_ms", older_than_ms),
            ("rate_per_sec", rate_per_sec),
        ):
            check_int(name, value, minimum=0)
        if target:
            self._queue(target)
        moved = 0
        walk: dlq.Walk | None = None
        for chunk, pause in dlq.chunk_plan(max, rate_per_sec):
            n, walk = self.redrive_chunk(queue, target, chunk, older_than_ms, walk, seq_numbers)
            moved += n
            if n < chunk:
                break
            if pause and not (max > 0 and moved >= max):
                self.clock.sleep_ms(dlq.PACE_INTERVAL_MS)
        return moved

    @serialized
    def redrive_chunk(
        self,
        queue: str,
        target: str | None,
        chunk: int,
        older_than_ms: int,
        walk: dlq.Walk | None = None,
        seq_numbers: Sequence[int] = (),
        *,
        actor: Actor | None = None,
    ) -> tuple[int, dlq.Walk]:
        """One transaction of a redrive: at most ``chunk`` dead letters (0 = all), the
        next of ``walk`` (None: the first, which fixes the walk); the moved count and the
        walk after it. A chunk that moved any is audited with its count and target."""
        q = self._queue(queue)
        dest = self._queue(target).name if target else q.name
        with self._write() as (conn, now):
            walk = walk or dlq.start_walk(conn, now, q.name)
            n, last = dlq.redrive(
                conn,
                now,
                q.name,
                target=None if dest == q.name else dest,
                max=chunk,
                older_than_ms=older_than_ms,
                walk=walk,
                seq_numbers=seq_numbers,
            )
            if n:
                audit.record(conn, now, actor, "Redrive", q.name, count=n, target=dest)
            self._wake_after_commit({dest: n} if n else {})
            self._count((q.name, "redriven", n))  # counted on the DLQ they left
        return n, walk.past(last)

    def purge(
        self,
        queue: str,
        max: int = 0,
        older_than_ms: int = 0,
        seq_numbers: Sequence[int] = (),
    ) -> int:
        """Delete dead letters (oldest first); all bounds empty purges the whole DLQ.
        Chunks of at most ``dlq.CHUNK_ROWS``, each its own transaction (as Redrive)."""
        self._queue(queue)
        check_int("max", max, minimum=0)
        check_int("older_than_ms", older_than_ms, minimum=0)
        purged = 0
        walk: dlq.Walk | None = None
        for chunk, _ in dlq.chunk_plan(max, 0):
            n, walk = self.purge_chunk(queue, chunk, older_than_ms, walk, seq_numbers)
            purged += n
            if n < chunk:
                break
        return purged

    @serialized
    def purge_chunk(
        self,
        queue: str,
        chunk: int,
        older_than_ms: int,
        walk: dlq.Walk | None = None,
        seq_numbers: Sequence[int] = (),
        *,
        actor: Actor | None = None,
    ) -> tuple[int, dlq.Walk]:
        """One transaction of a purge (as ``redrive_chunk``), audited with its count."""
        q = self._queue(queue)
        check_int("max", chunk, minimum=0)
        check_int("older_than_ms", older_than_ms, minimum=0)
        with self._write() as (conn, now):
            walk = walk or dlq.start_walk(conn, now, q.name)
            purged, last = dlq.purge(
                conn,
                now,
                q.name,
                max=chunk,
                older_than_ms=older_than_ms,
                walk=walk,
                seq_numbers=seq_numbers,
            )
            if purged:
                audit.record(conn, now, actor, "Purge", q.name, count=purged)
            self._count((q.name, "purged", purged))
        return purged, walk.past(last)

    @serialized
    def status(self) -> StatusSnapshot:
        """A desensitized runtime snapshot: never a DSN query string or a token."""
        started = self.clock.monotonic_ms()
        try:
            with self.store.transaction() as conn:
                conn.execute("SELECT 1").fetchone()
                counts = conn.execute(STATUS_COUNTS_SQL).fetchone()
            ping_ms = int(self.clock.monotonic_ms() - started)
        except sqlite3.Error:
            counts, ping_ms = (0, 0), -1
        location = self.store.location
        return {
            "backend": location.backend,
            "remote": location.is_remote,
            "location": location.shown,
            "schema_version": SCHEMA_VERSION,
            "ping_ms": ping_ms,
            "db_size_bytes": self.store.db_size_bytes(),
            "queues": int(counts[0]),
            "subscriptions": int(counts[1]),
        }
