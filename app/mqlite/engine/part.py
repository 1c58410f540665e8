"""A part of the engine: the verbs of one responsibility over the one shared core.

The facade (``engine.py``) builds one core (``core.py``: store, writer, clock, notifier,
catalog, key cache, measurements) and one instance of each part over it. A part binds the
core's state under the same names the verbs used when they were mixins of one class, so a
verb's body reads ``self.store``, ``self.catalog``, ``self._count(...)`` as before; a verb
of another part is reached explicitly through that part (``self.messaging._commit_send``).

Each transport is handed the parts it uses (``mqlite.scheduling``: ``Maintenance``), or a
Protocol over them (the server's ``Broker``), never the core.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TypeVar

from mqlite import errors
from mqlite.engine import queues
from mqlite.engine.core import EngineCore, serialized
from mqlite.engine.storage_errors import translate
from mqlite.types import Message, QueueInfo

T = TypeVar("T")


class Part:
    """The core's state, bound once (plain attributes: no indirection on the hot path),
    and the helpers every verb body uses."""

    def __init__(self, core: EngineCore) -> None:
        # Set once by the core's __init__ and never reassigned: binding them here is safe.
        self.clock = core.clock
        self.max_message_bytes = core.max_message_bytes
        self.dlq_defaults = core.dlq_defaults
        self.notifier = core.notifier
        self.started_at_ms = core.started_at_ms
        self.last_collection_ms = core.last_collection_ms
        self.effects = core.effects
        self.storage_ops = core.storage_ops
        self.maintenance_runs = core.maintenance_runs
        self.schedule_measures = core.schedule_measures
        self.replica = core.replica
        self.disk = core.disk
        self.store = core.store
        self.catalog = core.catalog
        self.keys = core.keys
        self.pushes = core.pushes  # push targets in memory (push.py)
        self.filter_failures = core.filter_failures
        self.writer = core.writer

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
