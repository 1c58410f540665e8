"""The engine's core: one store, one writer, one clock, one notifier, the catalog, recovery.

``Engine`` (the facade, ``engine.py``) is this core plus its parts (``part.py``): each part
holds the verbs of one responsibility over the core's state; the core holds no verbs.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sqlite3
from collections.abc import Callable
from typing import Any, ParamSpec, Protocol, TypeVar

from mqlite import defaults, errors
from mqlite.clock import SYSTEM_CLOCK, Clock
from mqlite.engine import queues, topics
from mqlite.engine.catalog import Catalog
from mqlite.engine.disk import DiskGuard, DiskLimits
from mqlite.engine.egress import Egress, parse_networks
from mqlite.engine.key_cache import KeyCache
from mqlite.engine.location import Location, parse_dsn
from mqlite.engine.maintenance import DLQBounds, recover_locks_by_queue
from mqlite.engine.maintenance_runs import MaintenanceRuns
from mqlite.engine.measure import MessageEffects, StorageOps
from mqlite.engine.measured_store import MeasuredStore
from mqlite.engine.notify import Notifier, Waiter
from mqlite.engine.push_registry import PushRegistry
from mqlite.engine.read_replica import ReplicaReads
from mqlite.engine.schedule_measures import ScheduleMeasures
from mqlite.engine.storage_errors import translate
from mqlite.engine.writer import Writer

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")
P = ParamSpec("P")

log = logging.getLogger("mqlite.engine")


class OnWriter(Protocol):
    """What ``serialized`` needs of its method's owner (the core, or one of its parts)."""

    writer: Writer


def serialized(method: F) -> F:
    """Run an engine method under the writer (``writer.py``): inline when the writer is
    free, on the writer thread (group commit) when it is busy, directly when nested."""

    @functools.wraps(method)
    def run(self: OnWriter, *args: Any, **kwargs: Any) -> Any:
        return self.writer.call(method, self, *args, **kwargs)

    return run  # type: ignore[return-value]


def outside_transaction(method: F) -> F:
    """Mark a writer method that must run with no transaction open (a WAL checkpoint,
    ``incremental_vacuum``, ``VACUUM``): the writer runs it alone, never inside a
    group-commit batch (where it failed with "not allowed inside a transaction" whenever
    writes were in flight -- found by the crash drill's checkpoint kill point)."""
    method.outside_transaction = True  # type: ignore[attr-defined]
    return method


class EngineCore:
    """State shared by every verb; opening runs crash recovery before anything else."""

    # The audit trail's retention bounds (0 = none; audit_ops.py reads them), set from
    # MQLITE_AUDIT_RETENTION / MQLITE_AUDIT_MAX_ROWS by the server.
    audit_max_age_ms: int = defaults.AUDIT_MAX_AGE_MS
    audit_max_rows: int = defaults.AUDIT_MAX_ROWS

    def __init__(
        self,
        dsn: str,
        *,
        clock: Clock | None = None,
        sync: str | None = None,
        max_message_bytes: int = defaults.MAX_MESSAGE_BYTES,
        dlq_defaults: DLQBounds | None = None,
        disk: DiskLimits | None = None,
        auth_token: str = "",
        checkpoint: str = "TRUNCATE",
        replica: str = "",
        push_allow_networks: str = "",
    ) -> None:
        if max_message_bytes <= 0:
            raise errors.InvalidArgument("max_message_bytes must be positive")
        self.clock: Clock = clock or SYSTEM_CLOCK
        self.max_message_bytes = max_message_bytes
        self.dlq_defaults = dlq_defaults or DLQBounds()
        self.notifier = Notifier()
        # The observation's in-process measurements (observe.py reads them on the writer).
        self.started_at_ms = self.clock.now_ms()
        self.last_collection_ms = 0
        self.effects = MessageEffects()
        self.storage_ops = StorageOps(self.clock.now_ms, lambda: self.clock.monotonic_ms() / 1000)
        self.maintenance_runs = MaintenanceRuns(self.clock.now_ms)
        self.schedule_measures = ScheduleMeasures()  # cron firings (schedule_firing.py)
        # Push targets in memory (push.py) and the egress guard they are checked by.
        self.pushes = PushRegistry(Egress(parse_networks(push_allow_networks)))
        location = parse_dsn(dsn)
        path = location.path
        self.replica: ReplicaReads | None = None
        if replica.strip():
            if location.remote is None:
                raise errors.InvalidArgument(
                    "MQLITE_DB_REPLICA needs a remote MQLITE_DB (a libSQL primary): "
                    "a local file has no replica to read from"
                )
            self.replica = ReplicaReads(replica.strip(), auth_token, self.storage_ops)
        self.disk: DiskGuard | None = None
        if path is not None:
            self.disk = DiskGuard(path, disk or DiskLimits(), self.clock.monotonic_ms)
            self.disk.open_on_a_full_disk()  # the WAL and -shm must fit before opening
        try:
            self.store = MeasuredStore(
                dsn,
                sync=sync,
                ops=self.storage_ops,
                checkpoint=checkpoint,
                auth_token=auth_token,
                now_ms=self.clock.now_ms,
            )
        except sqlite3.Error as exc:
            raise translate(exc) from exc
        try:
            self.catalog = Catalog(self.store)
            self.keys = KeyCache(self.clock)
            self.filter_failures = topics.FilterFailures(self.clock.monotonic_ms)
            self._recover()
            with self.store.transaction() as conn:
                self.catalog.load(
                    conn,
                    topics.load_routes(conn, queues.load_queues(conn), self.filter_failures),
                )
                self.keys.load(conn)
                self.pushes.load(conn)
        except sqlite3.Error as exc:
            self.store.close()
            raise translate(exc) from exc
        except BaseException:
            self.store.close()
            raise
        self.writer = Writer(self.store, self.disk.on_disk_full if self.disk else None)
        self.submit = self.writer.submit  # type: ignore[method-assign,assignment]  # no extra frame per RPC
        self.store.reconcile = self._reload_published
        self._compose()

    def _reload_published(self, conn: sqlite3.Connection) -> None:
        """After a COMMIT of unknown outcome (remote store): what it may have stored --
        a queue created or deleted, a key created or revoked -- was never published in
        memory, so the catalog and the key cache are read again (store.py), and every
        parked poll wakes to look for messages it may have sent."""
        self.catalog.load(
            conn, topics.load_routes(conn, queues.load_queues(conn), self.filter_failures)
        )
        self.keys.reload(conn)
        self.pushes.load(conn)
        notifier = self.notifier
        names = set(self.catalog.queues())
        self.store.after_commit(lambda: notifier.notify_all(names))
        self.effects.keep_only(names)  # a delete that did commit takes its counters
        log.warning("reloaded the catalog and the access keys after a commit of unknown outcome")

    def _recover(self) -> None:
        """§3.1: every locked row is an orphan of a previous process. On a full disk the
        reset is postponed (logged): the reaper releases those leases as they expire, and
        the broker can still start and let consumers drain."""
        try:
            with self.store.transaction() as conn:
                released, dead = recover_locks_by_queue(conn)
                self.effects.after_commit(
                    self.store,
                    [(q, "recovered", n) for q, n in released.items()]
                    + [(q, "dead_lettered", n) for q, n in dead.items()],
                )
        except sqlite3.Error as exc:
            if not isinstance(translate(exc), errors.StorageFull):
                raise
            if self.disk is not None:
                self.disk.on_disk_full()
            log.warning("the disk is full: crash recovery of locked messages is left to the reaper")

    # -- the facade's own -----------------------------------------------------------------

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def close(self) -> None:
        """Refuse new work, wake parked long polls, finish queued work, close the DB."""
        self.notifier.close()
        self.writer.stop()
        self.store.close()
        if self.replica is not None:
            self.replica.close()

    @property
    def closed(self) -> bool:
        return self.store.closed

    # -- the transport side: what a server needs of the writer, the notifier, the store -----

    @property
    def location(self) -> Location:
        """Where the database is (shown, never with a DSN's query string or token)."""
        return self.store.location

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> asyncio.Future[T]:
        """Queue ``fn`` for the writer thread (group commit); the future resolves on the
        running loop. (``__init__`` binds the writer's own ``submit`` over this one.)"""
        return self.writer.submit(fn, *args, **kwargs)

    def park(self, queue: str, wake: Callable[[], None]) -> Waiter:
        """Park a long poll on ``queue``: ``wake`` runs (any thread) when a commit makes
        a message claimable there; ``cancel()`` the waiter when done."""
        return self.notifier.register(queue, wake)

    def wake_one(self, queue: str) -> None:
        """Hand a wake a poll will not use to the next parked poll (notify.py)."""
        self.notifier.notify(queue, 1)

    def release_polls(self) -> None:
        """Wake every parked long poll and park no more (a drain: they return empty)."""
        self.notifier.close()

    def _compose(self) -> None:
        """Build the parts over this core (the facade, ``engine.py``): the last step of
        ``__init__``, once the writer exists."""
