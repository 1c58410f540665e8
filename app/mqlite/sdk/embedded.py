"""The embedded client: the broker in your process, as a narrow facade over the engine.

``open_embedded`` is the public entry point. ``EmbeddedClient`` has exactly the methods of
the ``Client`` protocol (the same as ``mqlite.connect``'s) plus the embedded-only extras:
``tx()`` (the transactional outbox), ``backup(path)``, ``vacuum()`` and the read-only
``clock`` it stamps times with. The engine, its
store and catalog stay private; tests reach them through ``mqlite.testing``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mqlite import defaults
from mqlite.clock import Clock
from mqlite.config import process_environ, sync_from_env
from mqlite.config import push_allow_networks as config_push_allow_networks
from mqlite.engine import SCHEMA_VERSION, DiskLimits, DLQBounds, Engine, EngineTx
from mqlite.engine import backup as snapshots
from mqlite.engine.backup import DatabaseFacts, Progress, Snapshot
from mqlite.engine.location import parse_dsn, require_file
from mqlite.scheduling import MaintenanceScheduler
from mqlite.sdk.embedded_methods import EmbeddedMethods
from mqlite.version import VERSION as __version__
from mqlite.wire import ObserveResponse, StatusResponse

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


class EmbeddedClient(EmbeddedMethods):
    """An in-process broker on one SQLite file (or ``:memory:``). Thread-safe.

    The verbs come from ``EmbeddedMethods`` (generated from the one call table, each a
    forwarder to the private engine); this class adds only what is embedded-only.
    """

    _engine: Engine

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
        disk_floor_bytes: int = defaults.DISK_FLOOR_BYTES,
        disk_reserve_bytes: int = defaults.DISK_RESERVE_BYTES,
        auth_token: str = "",
        replica: str = "",
        push_allow_networks: str | None = None,
    ) -> None:
        if sync is None:
            sync = sync_from_env(process_environ())
        self._engine = Engine(
            dsn,
            clock=clock,
            sync=sync,
            max_message_bytes=max_message_bytes,
            dlq_defaults=DLQBounds(dlq_max_age_ms, dlq_max_count, dlq_max_bytes),
            disk=DiskLimits(disk_floor_bytes, disk_reserve_bytes),
            auth_token=auth_token,
            replica=replica,
            push_allow_networks=(
                push_allow_networks
                if push_allow_networks is not None
                else config_push_allow_networks(process_environ())
            ),
        )
        # The producer's one call goes straight to the engine's verb: the generated
        # forwarder is a Python frame of its own on every send (same name, same signature).
        self.send_one = self._engine.send_one  # type: ignore[method-assign]
        self._started_ms = self._engine.now_ms()
        if catch_up:
            try:
                self._engine.catch_up()
            except BaseException:
                self._engine.close()
                raise
        self._scheduler: MaintenanceScheduler | None = None
        if background:
            from mqlite.push import PushDispatcher  # push's client only with the loops

            self._scheduler = MaintenanceScheduler(
                self._engine.maintenance, push=PushDispatcher(self._engine)
            )
            self._scheduler.start()

    def __repr__(self) -> str:
        return f"EmbeddedClient({self._engine.location.path or ':memory:'!r})"

    def status(self) -> StatusResponse:
        """The same ``StatusResponse`` a broker answers: ``auth`` is False (in-process
        access is trusted) and ``uptime_ms`` counts from this client's opening."""
        snapshot = self._engine.status()
        return StatusResponse(
            version=__version__,
            uptime_ms=max(self._engine.now_ms() - self._started_ms, 0),
            auth=False,
            **snapshot,
        )

    def observe(self) -> ObserveResponse:
        """The same ``ObserveResponse`` a broker answers, with ``access`` ``embedded`` and
        the HTTP domain ``not_applicable`` (there is no HTTP in between)."""
        return ObserveResponse.of(self._engine.observe(), access="embedded").check()

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
        engine = self._engine
        # Measured with the WAL checkpointed away both times, so the figures agree:
        # freed bytes are the reclaimed pages (a WAL that happens to exist is not counted).
        before = engine.checkpoint()
        if full:
            engine.vacuum_full()
            pages = -1
        else:
            pages = engine.reclaim_free_pages(force=True)
        return VacuumResult(full, pages, before, engine.checkpoint())

    def _file_path(self, what: str) -> str:
        return require_file(self._engine.location, what)

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the loops, wake long polls, finish queued work, checkpoint and close."""
        if self._scheduler is not None:
            self._engine.release_polls()
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
    disk_floor_bytes: int = defaults.DISK_FLOOR_BYTES,
    disk_reserve_bytes: int = defaults.DISK_RESERVE_BYTES,
    auth_token: str = "",
    replica: str = "",
    push_allow_networks: str | None = None,
) -> EmbeddedClient:
    """Open (creating if needed) a broker database in this process.

    ``clock``: an injectable clock (``mqlite.clock.FakeClock`` in tests). ``background``:
    run the maintenance loops (False in tests: ``mqlite.testing.run_maintenance_once``).
    ``catch_up``: right after opening, do once what the loops would have done while the
    database was closed (expired leases, due scheduled messages, TTL) -- for short-lived
    processes such as the CLI.
    ``sync``: NORMAL/FULL/OFF/EXTRA (default ``MQLITE_SYNC`` or NORMAL).
    ``max_message_bytes``: body cap per message. ``dlq_max_*``: engine-default DLQ
    retention bounds (0 = unbounded). ``disk_floor_bytes``: sends are refused with
    ``StorageFull`` while less is free on the database's filesystem (0: never), so
    consumers can drain; ``disk_reserve_bytes``: a reserve file released when the disk
    fills anyway (0: none). Both apply to file databases only. ``auth_token``: the token
    of a remote libSQL DSN (``libsql://``, ``https://``, ``http://``); never logged.
    ``replica``: the URL of a libSQL replica of that remote database: Peek, Stats, Observe
    and ListQueues read there (stale by milliseconds), everything else on the primary.
    ``push_allow_networks``: CIDRs push targets may reach although private or loopback
    (default ``MQLITE_PUSH_ALLOW_NETWORKS``, else none: docs/push.md).
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
        disk_floor_bytes=disk_floor_bytes,
        disk_reserve_bytes=disk_reserve_bytes,
        auth_token=auth_token,
        replica=replica,
        push_allow_networks=push_allow_networks,
    )


# -- file operations that need no open client (they work beside a running broker) ----------


def database_path(dsn: str, what: str = "this operation") -> str | None:
    """The canonical file a DSN names (None for ``:memory:``); the engine's own parsing.
    A remote libSQL DSN raises ``InvalidArgument`` naming why ``what`` is local-only."""
    location = parse_dsn(dsn)
    if location.remote is not None:
        require_file(location, what)
    return location.path


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
