"""The embedded client: the broker in your process, as a narrow facade over the engine.

``open_embedded`` is the public entry point. ``EmbeddedClient`` has exactly the methods of
the ``Client`` protocol (the same as ``mqlite.connect``'s) plus the embedded-only extras:
``tx()`` (the transactional outbox), ``backup(path)``, ``vacuum()`` and the read-only
``clock`` it stamps times with. The engine, its
store and catalog stay private; tests reach them through ``mqlite.testing``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mqlite import defaults
from mqlite.clock import Clock
from mqlite.config import sync_from_env
from mqlite.engine import SCHEMA_VERSION, DLQBounds, Engine, EngineTx
from mqlite.engine import backup as snapshots
from mqlite.engine.backup import DatabaseFacts, Progress, Snapshot
from mqlite.engine.store import parse_dsn
from mqlite.scheduling import MaintenanceScheduler
from mqlite.types import (
    AccessKey,
    BatchResult,
    FilterTestResult,
    Message,
    OutMessage,
    QueueConfig,
    QueueInfo,
    Stats,
    Subscription,
)
from mqlite.version import VERSION as __version__
from mqlite.wire import StatusResponse

if TYPE_CHECKING:
    from mqlite.sdk.protocol import Client


__all__ = [
    "SCHEMA_VERSION",
    "DatabaseFacts",
    "EmbeddedClient",
    "Snapshot",
    "VacuumResult",
    "database_path",
    "open_embedded",
    "restore_snapshot",
    "take_snapshot",
]


@dataclass(frozen=True, slots=True)
class VacuumResult:
    """What ``vacuum()`` did: file footprint (db + WAL + SHM) before and after."""

    full: bool
    pages_reclaimed: int  # incremental mode; -1 after a full VACUUM
    before_bytes: int
    after_bytes: int


class EmbeddedClient:
    """An in-process broker on one SQLite file (or ``:memory:``). Thread-safe."""

    def __init__(
        self,
        dsn: str = "file:./mq.db",
        *,
        clock: Clock | None = None,
        background: bool = True,
        catch_up: bool = False,
        sync: str | None = None,
        max_message_bytes: int = defaults.MAX_MESSAGE_BYTES,
        dlq_max_age_ms: int = 0,
        dlq_max_count: int = 0,
        dlq_max_bytes: int = 0,
    ) -> None:
        if sync is None:
            sync = sync_from_env(os.environ)
        self._engine = Engine(
            dsn,
            clock=clock,
            sync=sync,
            max_message_bytes=max_message_bytes,
            dlq_defaults=DLQBounds(dlq_max_age_ms, dlq_max_count, dlq_max_bytes),
        )
        self._started_ms = self._engine.now_ms()
        if catch_up:
            try:
                self._engine.catch_up()
            except BaseException:
                self._engine.close()
                raise
        self._scheduler: MaintenanceScheduler | None = None
        if background:
            self._scheduler = MaintenanceScheduler(self._engine)
            self._scheduler.start()

    def __repr__(self) -> str:
        return f"EmbeddedClient({self._engine.store.location.path or ':memory:'!r})"

    # -- queues ---------------------------------------------------------------------------

    def create_queue(self, name: str, config: QueueConfig | None = None) -> QueueInfo:
        return self._engine.create_queue(name, config)

    def list_queues(self) -> list[QueueInfo]:
        return self._engine.list_queues()

    def get_queue(self, name: str) -> QueueInfo:
        return self._engine.get_queue(name)

    def delete_queue(self, name: str, generation: str | None = None) -> None:
        self._engine.delete_queue(name, generation)

    # -- topics ---------------------------------------------------------------------------

    def subscribe(self, topic: str, name: str, expr: str | None = "") -> QueueInfo:
        return self._engine.subscribe(topic, name, expr)

    def unsubscribe(self, topic: str, name: str) -> None:
        self._engine.unsubscribe(topic, name)

    def list_subscriptions(self) -> list[Subscription]:
        return self._engine.list_subscriptions()

    def test_filter(
        self,
        expr: str,
        sample: OutMessage | None = None,
        enqueued_at_ms: int | None = None,
        visible_at_ms: int | None = None,
    ) -> FilterTestResult:
        return self._engine.test_filter(expr, sample, enqueued_at_ms, visible_at_ms)

    # -- send -----------------------------------------------------------------------------

    def send(
        self, queue: str, messages: Sequence[OutMessage], ttl_ms: int | None = None
    ) -> list[int]:
        return self._engine.send(queue, messages, ttl_ms)

    def send_one(self, queue: str, message: OutMessage, ttl_ms: int | None = None) -> int:
        return self._engine.send_one(queue, message, ttl_ms)

    def schedule(
        self,
        queue: str,
        messages: Sequence[OutMessage],
        at_ms: int,
        ttl_ms: int | None = None,
    ) -> list[int]:
        return self._engine.schedule(queue, messages, at_ms, ttl_ms)

    def cancel(self, queue: str, seq_number: int) -> None:
        self._engine.cancel(queue, seq_number)

    # -- receive and settle ---------------------------------------------------------------

    def receive(
        self,
        queue: str,
        max_messages: int = 1,
        wait_ms: int = 0,
        mode: str = "peek_lock",
        attempt_id: str | None = None,
    ) -> list[Message]:
        return self._engine.receive(queue, max_messages, wait_ms, mode, attempt_id)

    def receive_deferred(self, queue: str, seq_numbers: Sequence[int]) -> list[Message]:
        return self._engine.receive_deferred(queue, seq_numbers)

    def complete(self, queue: str, seq_number: int, lock_token: str) -> None:
        self._engine.complete(queue, seq_number, lock_token)

    def abandon(self, queue: str, seq_number: int, lock_token: str, delay_ms: int = 0) -> None:
        self._engine.abandon(queue, seq_number, lock_token, delay_ms)

    def reject(
        self,
        queue: str,
        seq_number: int,
        lock_token: str,
        reason: str = "",
        description: str = "",
    ) -> None:
        self._engine.reject(queue, seq_number, lock_token, reason, description)

    def defer(self, queue: str, seq_number: int, lock_token: str) -> None:
        self._engine.defer(queue, seq_number, lock_token)

    def renew(self, queue: str, seq_number: int, lock_token: str) -> int:
        return self._engine.renew(queue, seq_number, lock_token)

    def complete_batch(self, queue: str, items: Sequence[tuple[int, str]]) -> list[BatchResult]:
        return self._engine.complete_batch(queue, items)

    def renew_batch(self, queue: str, items: Sequence[tuple[int, str]]) -> list[BatchResult]:
        return self._engine.renew_batch(queue, items)

    # -- browse, dead letters, status -----------------------------------------------------

    def peek(
        self, queue: str, state: str | None = None, from_seq: int = 0, max: int = 0
    ) -> list[Message]:
        return self._engine.peek(queue, state, from_seq, max)

    def stats(self, queue: str) -> Stats:
        return self._engine.stats(queue)

    def redrive(
        self,
        queue: str,
        target: str | None = None,
        max: int = 0,
        older_than_ms: int = 0,
        rate_per_sec: int = 0,
    ) -> int:
        return self._engine.redrive(queue, target, max, older_than_ms, rate_per_sec)

    def purge(self, queue: str, max: int = 0, older_than_ms: int = 0) -> int:
        return self._engine.purge(queue, max, older_than_ms)

    def status(self) -> StatusResponse:
        """The same ``StatusResponse`` a broker answers: ``auth`` is False (in-process
        access is trusted) and ``uptime_ms`` counts from this client's opening."""
        snapshot = self._engine.status()
        ping = snapshot.pop("ping_ms")
        return StatusResponse(
            version=__version__,
            uptime_ms=max(self._engine.now_ms() - self._started_ms, 0),
            auth=False,
            ping_ms=round(ping) if isinstance(ping, int | float) else -1,
            **snapshot,  # type: ignore[arg-type]
        )

    # -- access keys ----------------------------------------------------------------------

    def create_key(
        self, id: str, name: str, permissions: Sequence[str], expires_at_ms: int = 0
    ) -> tuple[AccessKey, str]:
        return self._engine.create_key(id, name, permissions, expires_at_ms)

    def list_keys(
        self, after_id: str = "", limit: int = 100, sort: str = "id_asc"
    ) -> tuple[list[AccessKey], str]:
        return self._engine.list_keys(after_id, limit, sort)

    def revoke_key(self, id: str) -> None:
        self._engine.revoke_key(id)

    # -- embedded-only extras -------------------------------------------------------------

    @property
    def clock(self) -> Clock:
        """The clock this broker stamps every time with (a ``Receiver`` on this client
        judges lease deadlines by it, so an injected ``FakeClock`` works end to end)."""
        return self._engine.clock

    @contextmanager
    def tx(self) -> Iterator[EngineTx]:
        """The transactional outbox: your SQL and mqlite's sends in ONE transaction."""
        with self._engine.tx() as tx:
            yield tx

    def backup(
        self, path: str, *, force: bool = False, progress: Progress | None = None
    ) -> Snapshot:
        """A verified, checksummed online snapshot at ``path`` (file databases only);
        taken on a separate read-only connection, so writers keep going meanwhile."""
        return take_snapshot(self._file_path("backup"), path, force=force, progress=progress)

    def vacuum(self, *, full: bool = False) -> VacuumResult:
        """Return free pages to the OS: incremental by default; ``full`` rewrites the
        whole file (needs free disk the size of the database, holds the writer)."""
        self._file_path("vacuum")
        store = self._engine.store
        before = store.db_size_bytes()
        if full:
            self._engine.vacuum_full()
            pages = -1
        else:
            pages = self._engine.reclaim_free_pages(force=True)
        return VacuumResult(full, pages, before, store.db_size_bytes())

    def _file_path(self, what: str) -> str:
        path = self._engine.store.location.path
        if path is None:
            from mqlite import errors

            raise errors.InvalidArgument(f"{what} needs a database file, not :memory:")
        return path

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the loops, wake long polls, finish queued work, checkpoint and close."""
        if self._scheduler is not None:
            self._engine.notifier.close()
            self._scheduler.stop()
            self._scheduler = None
        self._engine.close()

    def __enter__(self) -> EmbeddedClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_embedded(
    dsn: str = "file:./mq.db",
    *,
    clock: Clock | None = None,
    background: bool = True,
    catch_up: bool = False,
    sync: str | None = None,
    max_message_bytes: int = defaults.MAX_MESSAGE_BYTES,
    dlq_max_age_ms: int = 0,
    dlq_max_count: int = 0,
    dlq_max_bytes: int = 0,
) -> EmbeddedClient:
    """Open (creating if needed) a broker database in this process.

    ``clock``: an injectable clock (``mqlite.clock.FakeClock`` in tests). ``background``:
    run the maintenance loops (False in tests: ``mqlite.testing.run_maintenance_once``).
    ``catch_up``: right after opening, do once what the loops would have done while the
    database was closed (expired leases, due scheduled messages, TTL) -- for short-lived
    processes such as the CLI.
    ``sync``: NORMAL/FULL/OFF/EXTRA (default ``MQLITE_SYNC`` or NORMAL).
    ``max_message_bytes``: body cap per message. ``dlq_max_*``: engine-default DLQ
    retention bounds (0 = unbounded).
    """
    return EmbeddedClient(
        dsn,
        clock=clock,
        background=background,
        catch_up=catch_up,
        sync=sync,
        max_message_bytes=max_message_bytes,
        dlq_max_age_ms=dlq_max_age_ms,
        dlq_max_count=dlq_max_count,
        dlq_max_bytes=dlq_max_bytes,
    )


# -- file operations that need no open client (they work beside a running broker) ----------


def database_path(dsn: str) -> str | None:
    """The canonical file a DSN names (None for ``:memory:``); the engine's own parsing."""
    return parse_dsn(dsn).path


def take_snapshot(
    source: str, dest: str, *, force: bool = False, progress: Progress | None = None
) -> Snapshot:
    """Snapshot the database FILE ``source`` (even while a broker owns it) to ``dest``."""
    return snapshots.snapshot(source, dest, force=force, progress=progress)


def restore_snapshot(snapshot: str, data_dir: str) -> tuple[str, str, DatabaseFacts]:
    """Verify ``snapshot`` and restore it as ``data_dir/mq.db``: (path, sha256, facts)."""
    return snapshots.restore(snapshot, data_dir)


if TYPE_CHECKING:

    def _conforms(c: EmbeddedClient) -> Client:
        return c
