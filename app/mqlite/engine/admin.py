"""Browse, DLQ operations and maintenance, as methods mixed into the Engine facade.

Maintenance passes are pure functions of (database, now) in ``maintenance.py``; this mixin
runs each in its own transaction with the injected clock and wakes long polls for queues
that gained claimable work once the pass commits.
"""

from __future__ import annotations

import functools
import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mqlite import errors
from mqlite.engine import audit, dlq, killpoints, maintenance, peek
from mqlite.engine.audit import Actor
from mqlite.engine.core import EngineCore, outside_transaction, serialized
from mqlite.engine.diagnostics import INTERRUPTIONS
from mqlite.engine.store import SCHEMA_VERSION, require_file
from mqlite.engine.validate import check_int
from mqlite.types import Message, Stats

VACUUM_SQL = "VACUUM"

STATUS_COUNTS_SQL = """
SELECT (SELECT count(*) FROM queues WHERE kind = 'queue'), (SELECT count(*) FROM subscriptions)
"""


@dataclass(frozen=True, slots=True)
class MaintenanceReport:
    """What one ``run_maintenance_once`` did (counts per pass)."""

    reaped_queues: int = 0
    activated_queues: int = 0
    expired: int = 0
    dedup_pruned: int = 0
    receipts_pruned: int = 0
    attempts_pruned: int = 0
    dlq_dropped: int = 0
    pages_reclaimed: int = 0
    schedules_fired: int = 0  # cron slots sent (engine/schedules.py)
    audit_pruned: int = 0  # audit rows past retention (engine/audit_ops.py)


class AdminOps(EngineCore):
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
    def status(self) -> dict[str, object]:
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

    # -- maintenance ----------------------------------------------------------------------
    # Each pass runs as a task of maintenance_runs.py (outcomes, durations, failed steps);
    # each step is its own transaction, and its message effects count once it commits.

    @serialized
    def _pass(self, fn: Callable[[sqlite3.Connection, int], Any]) -> Any:
        with self._write() as (conn, now):
            result = fn(conn, now)
            if isinstance(result, Counter):
                self._wake_after_commit(result)
        return result

    @serialized
    def _task(self, task: str, *steps: tuple[str, Callable[[], Any]]) -> list[Any]:
        return self.maintenance_runs.run(task, steps)

    def _tx(self, fn: Callable[[sqlite3.Connection, int], Any]) -> Callable[[], Any]:
        """A step that runs ``fn`` in its own transaction (``_pass``)."""
        return functools.partial(self._pass, fn)

    def reap_locks(self) -> Counter[str]:
        """Released expired leases, per queue (the 1 s pass; it also refreshes what the
        disk guard counts as the database's free pages)."""
        reaped: Counter[str] = self._task("locks", ("reap", self._tx(self._reap)))[0]
        self._note_freelist()
        return reaped

    @serialized
    def _note_freelist(self) -> None:
        if self.disk is not None:  # a read: fine inside a group-commit batch's transaction
            self.disk.note_freelist(maintenance.free_page_bytes(self.store.reader()))

    def activate_scheduled(self) -> Counter[str]:
        """Activated scheduled messages, per queue."""
        return self._task("scheduled", ("activate", self._tx(self._activate)))[0]  # type: ignore[no-any-return]

    def expire_ttl(self) -> int:
        return self._task("ttl", ("expire", self._tx(self._expire)))[0]  # type: ignore[no-any-return]

    def run_janitors(self) -> tuple[int, int, int, int, int]:
        """Dedup, receipt and attempt pruning plus DLQ and audit retention (the 60 s
        cadence): three tasks, each run even if an earlier one failed (the first failure
        is re-raised)."""
        results: list[int] = []
        first: Exception | None = None
        for task, steps in (
            ("dedup", (("prune_dedup", self._tx(maintenance.prune_dedup)),)),
            (
                "receipts",
                (
                    ("settlement_receipts", self._tx(maintenance.prune_receipts)),
                    ("receive_attempts", self._tx(maintenance.prune_attempts)),
                ),
            ),
            (
                "retention",
                (
                    ("dlq_retention", self._tx(self._retention)),
                    # The audit trail's (audit_ops.py): its own bounded chunks.
                    ("audit_retention", self.prune_audit),  # type: ignore[attr-defined]
                ),
            ),
        ):
            try:
                results += self._task(task, *steps)
            except INTERRUPTIONS:
                raise
            except Exception as exc:
                first = first or exc
                results += [0] * len(steps)
        if first is not None:
            raise first
        return results[0], results[1], results[2], results[3], results[4]

    def _reap(self, conn: sqlite3.Connection, now: int) -> Counter[str]:
        released, dead = maintenance.reap_locks_by_queue(conn, now, self.catalog.retry_policies())
        self._count(*_effects(released, "lock_expired"), *_effects(dead, "dead_lettered"))
        return released

    def _activate(self, conn: sqlite3.Connection, now: int) -> Counter[str]:
        activated = maintenance.activate_scheduled(conn, now)
        self._count(*_effects(activated, "activated"))
        return activated

    def _expire(self, conn: sqlite3.Connection, now: int) -> int:
        dead, discarded = maintenance.expire_ttl_by_queue(conn, now)
        self._count(*_effects(dead, "dead_lettered"), *_effects(discarded, "ttl_discarded"))
        return sum(dead.values()) + sum(discarded.values())

    def _retention(self, conn: sqlite3.Connection, now: int) -> int:
        deleted = maintenance.enforce_dlq_retention_by_queue(conn, now, self.dlq_defaults)
        self._count(*_effects(deleted, "retention_deleted"))
        return sum(deleted.values())

    @serialized
    @outside_transaction
    def reclaim_free_pages(self, force: bool = False) -> int:
        """Return free pages to the OS (file databases only)."""
        if self.store.location.path is None:
            return 0
        with self.store.connection() as conn:
            return maintenance.reclaim_free_pages(
                conn, force=force, checkpoint_sql=self.store.checkpoint_sql
            )

    @outside_transaction  # handed to the writer by the scheduler: never inside a batch
    def reclaim_pass(self) -> int:
        """The maintenance task ``reclaim`` (inapplicable, so not run, in memory or on a
        remote server, which compacts its own storage)."""
        if self.store.location.path is None:
            return 0
        step = ("incremental_vacuum", self.reclaim_free_pages)  # outside a transaction
        return self._task("reclaim", step)[0]  # type: ignore[no-any-return]

    @serialized
    @outside_transaction
    def checkpoint(self) -> int:
        """Checkpoint the WAL into the database and truncate it (PASSIVE under Litestream,
        which resets the WAL itself); returns the footprint (db + WAL + SHM) afterwards.
        File databases only (0 in memory)."""
        if self.store.location.path is not None:
            with self.store.connection() as conn:
                killpoints.reached("checkpoint")
                conn.execute(self.store.checkpoint_sql).fetchall()
        return self.store.db_size_bytes()

    @serialized
    @outside_transaction
    def vacuum_full(self) -> None:
        """Rebuild the whole file (``VACUUM``): returns every free page, needs free disk
        space the size of the database, and holds the writer for the duration."""
        if self.store.location.is_memory:
            return
        require_file(self.store.location, "vacuum")
        with self.store.connection() as conn:
            conn.execute(self.store.checkpoint_sql).fetchall()
            conn.execute(VACUUM_SQL)
            conn.execute(self.store.checkpoint_sql).fetchall()

    def catch_up(self) -> None:
        """The time-driven passes once (leases, scheduled, TTL): what the loops would have
        done while no process had the database open."""
        self.reap_locks()
        self.activate_scheduled()
        self.expire_ttl()

    @serialized
    def renew_lease(self) -> bool:
        """Renew this broker's lease on a remote database (the 10 s pass, engine/lease.py);
        False on a local file (its flock needs no renewal). A lost lease raises
        ``DBLocked``, and every later write is refused with it."""
        return self.store.renew_lease()

    def run_maintenance_once(self) -> MaintenanceReport:
        """Every pass once, in the spec's order, at the clock's current time (the lease
        renewal of a remote store first)."""
        self.renew_lease()
        reaped = self.reap_locks()
        activated = self.activate_scheduled()
        expired = self.expire_ttl()
        dedup_n, receipts_n, attempts_n, dropped, audit_n = self.run_janitors()
        pages = self.reclaim_pass()
        fired = self.fire_schedules()  # type: ignore[attr-defined]  # ScheduleOps, in Engine
        return MaintenanceReport(
            len(reaped),
            len(activated),
            expired,
            dedup_n,
            receipts_n,
            attempts_n,
            dropped,
            pages,
            fired,
            audit_n,
        )


def _effects(counts: Counter[str], event: str) -> list[tuple[str, str, int]]:
    return [(queue, event, n) for queue, n in counts.items()]
