"""The engine's plumbing: one store, one writer, one clock, one notifier, the catalog, recovery.

``Engine`` (the facade) and its verb mixins build on this base; it holds no verbs.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from mqlite import defaults, errors
from mqlite.clock import SYSTEM_CLOCK, Clock
from mqlite.engine import queues, topics
from mqlite.engine.catalog import Catalog
from mqlite.engine.disk import DiskGuard, DiskLimits
from mqlite.engine.egress import Egress, parse_networks
from mqlite.engine.key_cache import KeyCache
from mqlite.engine.maintenance import DLQBounds, recover_locks_by_queue
from mqlite.engine.maintenance_runs import MaintenanceRuns
from mqlite.engine.measure import MessageEffects, StorageOps
from mqlite.engine.measured_store import MeasuredStore
from mqlite.engine.notify import Notifier
from mqlite.engine.push_registry import PushRegistry
from mqlite.engine.read_replica import ReplicaReads
from mqlite.engine.schedule_measures import ScheduleMeasures
from mqlite.engine.storage_errors import translate
from mqlite.engine.store import parse_dsn
from mqlite.engine.writer import Writer
from mqlite.types import Message, QueueInfo

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

log = logging.getLogger("mqlite.engine")


def serialized(method: F) -> F:
    """Run an engine method under the writer (``writer.py``): inline when the writer is
    free, on the writer thread (group commit) when it is busy, directly when nested."""

    @functools.wraps(method)
    def run(self: EngineCore, *args: Any, **kwargs: Any) -> Any:
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
        self.schedule_measures = ScheduleMeasures()  # cron firings (schedules.py)
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
        self.store.reconcile = self._reload_published

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

    # -- plumbing -------------------------------------------------------------------------

    def now_ms(self) -> int:
        return self.clock.now_ms()

    @contextmanager
    def _write(self) -> Iterator[tuple[sqlite3.Connection, int]]:
        """A transaction plus the ``now`` sampled after the writer was acquired."""
        with self.store.transaction() as conn:
            yield conn, self.clock.now_ms()

    def _wake_after_commit(self, counts: Mapping[str, int]) -> None:
        """After COMMIT, wake as many parked polls per queue as it gained claimable rows."""
        if counts:
            notifier = self.notifier
            self.store.after_commit(lambda: notifier.notify_counts(counts))

    def _wake_all_after_commit(self, names: set[str]) -> None:
        """After COMMIT, wake every parked poll of these queues (deleted, unsubscribed)."""
        notifier = self.notifier
        self.store.after_commit(lambda: notifier.notify_all(names))

    def _read_stale(self, read: Callable[[sqlite3.Connection], T]) -> T:
        """Run a read that tolerates staleness: on the replica when there is one (off the
        writer: read_replica.py), else in a transaction on the writer."""
        if self.replica is not None:
            try:
                with self.replica.read() as conn:
                    return read(conn)  # type: ignore[arg-type]
            except sqlite3.Error as exc:  # as the writer translates its calls' errors
                raise translate(exc) from exc
        return self._read_primary(read)

    @serialized
    def _read_primary(self, read: Callable[[sqlite3.Connection], T]) -> T:
        with self.store.transaction() as conn:
            return read(conn)

    def _queue(self, name: object) -> QueueInfo:
        return self.catalog.queue(queues.validate_name(name))

    def tend_disk(self) -> None:
        """Recreate the disk reserve once there is room (maintenance; never on the writer:
        it writes a file of reserve_bytes)."""
        if self.disk is not None:
            self.disk.tend()

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

    def _bind(self, msgs: list[Message]) -> list[Message]:
        for m in msgs:
            object.__setattr__(m, "_settler", self if m.lock_token else errors.NO_LOCK)
        return msgs

    def _completed(self, queue: str, n: int) -> None:
        self.effects.add(queue, "completed", n)  # runs as an after-commit callback
        self.notifier.notify(queue, n)  # a completed group head may unblock its successor

    def _count(self, *effects: tuple[str, str, int]) -> None:
        """Count message effects once the current transaction commits (measure.py)."""
        self.effects.after_commit(self.store, effects)
