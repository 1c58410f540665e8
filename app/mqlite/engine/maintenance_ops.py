"""The maintenance passes: reaper, scheduled activation, TTL, janitors, free-page reclaim,
checkpoint and VACUUM, the remote lease.

Maintenance passes are pure functions of (database, now) in ``maintenance.py``; these verbs
run each in its own transaction with the injected clock and wake long polls for queues
that gained claimable work once the pass commits.
"""

from __future__ import annotations

import functools
import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from mqlite.engine import killpoints, maintenance
from mqlite.engine.audit_ops import Audit
from mqlite.engine.core import EngineCore, outside_transaction, serialized
from mqlite.engine.diagnostics import INTERRUPTIONS
from mqlite.engine.location import require_file
from mqlite.engine.part import Part
from mqlite.engine.schedule_firing import ScheduleFiring

VACUUM_SQL = "VACUUM"

T = TypeVar("T")


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
    schedules_fired: int = 0  # cron slots sent (engine/schedule_firing.py)
    audit_pruned: int = 0  # audit rows past retention (engine/audit_ops.py)


class Maintenance(Part):
    """The passes the maintenance scheduler runs (``mqlite.scheduling`` is handed this
    part and nothing else of the engine), the cron firing pass through ``schedule_firing``."""

    def __init__(self, core: EngineCore, schedule_firing: ScheduleFiring, audit: Audit) -> None:
        super().__init__(core)
        self.schedule_firing = schedule_firing
        self.audit = audit

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
                    ("audit_retention", self.audit.prune_audit),
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
        fired = self.fire_schedules()
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

    def fire_schedules(self) -> int:
        """The cron pass (off the writer: it takes it per batch of due schedules)."""
        return self.schedule_firing.fire_schedules()

    def tend_disk(self) -> None:
        """Recreate the disk reserve once there is room (maintenance; never on the writer:
        it writes a file of reserve_bytes)."""
        if self.disk is not None:
            self.disk.tend()

    # -- what the scheduler needs to know (it is handed this part, never the store) -------

    @property
    def leased(self) -> bool:
        """A remote database held under a lease (lease.py): the scheduler renews it."""
        return self.store.lease is not None

    @property
    def lease_lost(self) -> bool:
        return self.store.lease is not None and self.store.lease.lost is not None

    @property
    def on_file(self) -> bool:
        """A database file (free-page reclaim applies; in memory or remote it does not)."""
        return self.store.location.path is not None

    def on_writer(self, fn: Callable[[], T]) -> T:
        """Run a pass on the writer thread, batched with other work."""
        return self.writer.call_on_thread(fn)

    def enable(self, tasks: Sequence[str]) -> None:
        """The tasks Observe reports as enabled: those a scheduler runs."""
        self.maintenance_runs.enable(tasks)


def _effects(counts: Counter[str], event: str) -> list[tuple[str, str, int]]:
    return [(queue, event, n) for queue, n in counts.items()]
