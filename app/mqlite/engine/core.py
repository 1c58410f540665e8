"""The engine's plumbing: one store, one clock, one notifier, the catalog, and recovery.

``Engine`` (the facade) and ``AdminOps`` build on this base; it holds no verbs.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from mqlite import defaults, errors
from mqlite.clock import SYSTEM_CLOCK, Clock
from mqlite.engine import queues, topics
from mqlite.engine.catalog import Catalog
from mqlite.engine.maintenance import DLQBounds, recover_locks
from mqlite.engine.notify import Notifier
from mqlite.engine.store import Store
from mqlite.types import Message, QueueInfo


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
    ) -> None:
        if max_message_bytes <= 0:
            raise errors.InvalidArgument("max_message_bytes must be positive")
        self.clock: Clock = clock or SYSTEM_CLOCK
        self.max_message_bytes = max_message_bytes
        self.dlq_defaults = dlq_defaults or DLQBounds()
        self.notifier = Notifier()
        self.completed: Counter[str] = Counter()  # rows deleted by Complete, per queue
        self.store = Store(dsn, sync=sync)
        try:
            self.catalog = Catalog()
            self.filter_failures = topics.FilterFailures(self.clock.monotonic_ms)
            with self.store.transaction() as conn:
                self.recovered_locks = self._recover(conn)
                self.catalog.load(conn)
                self.catalog.set_topics(
                    topics.load_routes(conn, self.catalog.queues(), self.filter_failures)
                )
        except BaseException:
            self.store.close()
            raise

    def _recover(self, conn: sqlite3.Connection) -> int:
        """Crash recovery: every locked row is an orphan of a previous process (§3.1)."""
        return recover_locks(conn)

    # -- plumbing -------------------------------------------------------------------------

    def now_ms(self) -> int:
        return self.clock.now_ms()

    @contextmanager
    def _write(self) -> Iterator[tuple[sqlite3.Connection, int]]:
        """A transaction plus the ``now`` sampled after the writer was acquired."""
        with self.store.transaction() as conn:
            yield conn, self.clock.now_ms()

    def _notify_after_commit(self, names: set[str]) -> None:
        if names:
            notifier = self.notifier
            self.store.after_commit(lambda: notifier.notify_many(names))

    def _queue(self, name: object) -> QueueInfo:
        return self.catalog.queue(queues.validate_name(name))

    def close(self) -> None:
        """Refuse new work, wake parked long polls, wait for in-flight work, close the DB."""
        self.notifier.close()
        self.store.close()

    @property
    def closed(self) -> bool:
        return self.store.closed

    def _bind(self, msgs: list[Message]) -> list[Message]:
        for m in msgs:
            if m.lock_token:
                object.__setattr__(m, "_settler", self)
        return msgs

    def _completed(self, queue: str, n: int) -> None:
        self.completed[queue] += n
        self.notifier.notify(queue)  # completing a group head may unblock its successor
