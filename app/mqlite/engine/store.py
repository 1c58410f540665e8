"""The storage seam: open, pragmas, schema guard, the one writer, transactions, recovery hook.

Exactly one ``sqlite3`` connection per database; every statement runs under one lock, so
writes are serialized before SQLite sees them (no SQLITE_BUSY loops, no interleaving). A
local file is locked (``file_lock.py``: the sidecar ``<canonical path>.lock`` and the
database file's inode) so a second opener -- another process, this one again, or a hard
link -- fails fast with ``DBLocked`` instead of keeping a second WAL. A remote store (a
remote libSQL server (``libsql://``, ``https://``, ``http://``; ``remote.py``) implements the
same verbs through a connection that behaves like ``sqlite3``'s: the same schema and SQL,
no file lock (``lease.py`` keeps one broker per database there), no PRAGMAs (the server
owns durability), and a lost COMMIT acknowledgement raised as ``OutcomeUnknown``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from importlib import resources

from mqlite import defaults, errors
from mqlite.clock import SYSTEM_CLOCK
from mqlite.engine import killpoints, migrations
from mqlite.engine.file_lock import DatabaseLock, check_free
from mqlite.engine.lease import Lease
from mqlite.engine.lease import check_free as check_lease_free
from mqlite.engine.location import parse_dsn
from mqlite.engine.remote import (
    RemoteConnection,
    RemoteUnreachable,
    TransactionLost,
)
from mqlite.engine.schema_guard import SCHEMA_VERSION as SCHEMA_VERSION  # (re-exported)
from mqlite.engine.schema_guard import check_guard

log = logging.getLogger("mqlite.engine")

MIN_SQLITE = (3, 37, 0)


def schema_sql() -> str:
    """The canonical DDL shipped as package data (pinned by the golden test)."""
    return resources.files("mqlite.engine").joinpath("schema.sql").read_text(encoding="utf-8")


def schema_statements() -> list[str]:
    """``schema.sql`` split into single statements (full-line ``--`` comments dropped)."""
    lines = [ln for ln in schema_sql().splitlines() if not ln.lstrip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


# How the engine checkpoints the WAL. TRUNCATE (the default) folds the WAL back into the
# file and empties it. PASSIVE for a database replicated by Litestream (docs/replication.md):
# Litestream holds a read transaction to own the WAL's lifetime, so a TRUNCATE (or FULL,
# RESTART) never completes while it runs -- it blocks the one writer for the whole busy
# timeout and fails. PASSIVE copies what it can without waiting and leaves the WAL's
# reset to Litestream's own checkpoints. SQLite's automatic checkpoint is PASSIVE already.
CHECKPOINT_MODES = ("TRUNCATE", "PASSIVE")


def checkpoint_sql(mode: str) -> str:
    if mode not in CHECKPOINT_MODES:
        raise errors.InvalidArgument(
            f"checkpoint mode must be one of {', '.join(CHECKPOINT_MODES)}, got {mode!r}"
        )
    return f"PRAGMA wal_checkpoint({mode})"


def parse_sync(value: str | None) -> str:
    mode = (value or defaults.DEFAULT_SYNC).strip().upper()
    if mode not in defaults.SYNC_MODES:
        raise errors.InvalidArgument(
            f"synchronous must be one of {', '.join(defaults.SYNC_MODES)}, got {value!r}"
        )
    return mode


@dataclass
class _TxState:
    """The open transaction: nesting depth, what to run after COMMIT, and how to undo
    in-memory changes if a (sav)epoint rolls back (the catalog's staged edits)."""

    depth: int = 0
    after_commit: list[Callable[[], None]] = field(default_factory=list)
    on_rollback: list[Callable[[], None]] = field(default_factory=list)

    def roll_back_to(self, commit_mark: int, undo_mark: int) -> None:
        del self.after_commit[commit_mark:]  # the rolled-back block's wake-ups
        undo = self.on_rollback[undo_mark:]
        del self.on_rollback[undo_mark:]
        for callback in reversed(undo):
            callback()


class Store:
    """One connection, one writer; ``transaction()`` is the only way to write."""

    def __init__(
        self,
        dsn: str,
        *,
        sync: str | None = None,
        busy_timeout_ms: int = defaults.BUSY_TIMEOUT_MS,
        auth_token: str = "",
        checkpoint: str = "TRUNCATE",
        now_ms: Callable[[], int] | None = None,
    ) -> None:
        if sqlite3.sqlite_version_info < MIN_SQLITE:
            raise errors.UnsupportedSQLite(
                f"SQLite {sqlite3.sqlite_version} is too old: mqlite needs 3.37 or newer"
            )
        self.location = parse_dsn(dsn)
        self.sync = parse_sync(sync)
        self.checkpoint_sql = checkpoint_sql(checkpoint)
        self.lock = threading.RLock()  # the writer token (see writer.py)
        self._tx = _TxState()
        # The list's own append, bound once (every send registers a callback: no Python
        # frame for it). The list is emptied in place at COMMIT, never replaced.
        self.after_commit = self._tx.after_commit.append  # type: ignore[method-assign,assignment]
        self._file_lock: DatabaseLock | None = None
        self._closed = False
        self.migrated_from: str | None = None  # the schema token an open migrated from
        # A COMMIT whose outcome is unknown may have published nothing in memory that it
        # stored (a queue, a revoked key): ``reconcile`` (set by the engine) reloads that
        # state at the start of the next transaction (issue 26).
        self.in_doubt = False
        self.reconcile: Callable[[sqlite3.Connection], None] | None = None
        if self.location.path is not None:
            self._file_lock = DatabaseLock(self.location.path)
        self._auth_token = auth_token  # never logged, never in an exception message
        # One broker per remote database (lease.py), on the engine's clock.
        self.lease: Lease | None = None
        if self.location.remote is not None:
            self.lease = Lease(self.location.remote.masked, now_ms or SYSTEM_CLOCK.now_ms)
        try:
            self.conn, found = self._connect(busy_timeout_ms)
            try:
                if self.lease is not None:  # before any schema write or recovery
                    self.lease.take(self.conn)
                self._install_schema(found)
            except BaseException:
                self.conn.close()
                raise
        except BaseException:
            self._release_file_lock()
            raise

    # -- opening -------------------------------------------------------------------------

    def _connect(self, busy_timeout_ms: int) -> tuple[sqlite3.Connection, str | None]:
        """The connection, and the schema token found; the guard runs FIRST, on reads
        only, so a refused file is left byte for byte as it was (no switch to WAL)."""
        if self.location.remote is not None:
            # Durability, journal mode and locking belong to the server: no PRAGMA here.
            remote = RemoteConnection(self.location.remote, self._auth_token)
            try:
                return remote, check_guard(remote)  # type: ignore[arg-type,return-value]
            except BaseException:
                remote.close()  # a refused open leaves no connection behind
                raise
        target = self.location.path or ":memory:"
        conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            conn.execute("PRAGMA foreign_keys=ON")
            found = check_guard(conn)
            if self.location.path is not None:
                # auto_vacuum only takes effect before the first table exists, and setting it
                # on an existing file is a write: skipped there (a full disk must still open).
                if conn.execute("PRAGMA page_count").fetchone()[0] == 0:
                    conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
                conn.execute("PRAGMA journal_mode=WAL")
                # Debian builds SQLite with SECURE_DELETE: every freed page would be zeroed
                # on disk, so deleting a 1 MiB message would write 1 MiB. FAST zeroes only
                # what is written anyway; freed pages are reused or returned to the OS by
                # the incremental vacuum.
                conn.execute("PRAGMA secure_delete=FAST")
                conn.execute(f"PRAGMA synchronous={self.sync}")
                conn.execute("PRAGMA temp_store=MEMORY")
        except BaseException:
            conn.close()
            raise
        return conn, found

    def _begin(self) -> None:
        """Open the outermost transaction (on a remote store fenced by the lease: refused
        once lost, renewed first once due; ``Lease.begin``)."""
        if self.lease is None:
            self.conn.execute("BEGIN IMMEDIATE")
        else:
            self.lease.begin(self.conn, self._tx.after_commit.append)

    def renew_lease(self) -> bool:
        """The maintenance loop's renewal, in its own transaction; False on a local file.
        A lost lease raises ``DBLocked`` (and stays lost)."""
        lease = self.lease
        if lease is None:
            return False
        with self.transaction() as conn:
            lease.renew_in(conn, self.after_commit)
        return True

    def _install_schema(self, found: str | None) -> None:
        """Create what is missing (migrating an older token first); the guard already ran."""
        conn = self.conn
        if found == SCHEMA_VERSION and self._schema_complete():
            return  # nothing to create: no write transaction (a full disk must still open)
        conn.execute("BEGIN IMMEDIATE")
        try:
            if found is not None and found != SCHEMA_VERSION:
                self.migrated_from = found
                migrations.migrate(conn, found, SCHEMA_VERSION)
            for stmt in schema_statements():
                conn.execute(stmt)
            conn.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)",
                (SCHEMA_VERSION,),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _schema_complete(self) -> bool:
        """Every table and index of schema.sql exists (then opening writes nothing)."""
        wanted = {
            stmt.split()[5 if " IF NOT EXISTS " in stmt else 2]
            for stmt in schema_statements()
            if stmt.upper().startswith(("CREATE TABLE", "CREATE INDEX"))
        }
        have = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master")}
        return wanted <= have

    # -- the one writer ------------------------------------------------------------------

    def transaction(self) -> _Transaction:
        """Run a block atomically on the one connection: ``with store.transaction() as conn``.

        The outermost block is ``BEGIN IMMEDIATE`` ... ``COMMIT`` (rollback on any
        exception); a block nested in it on the same thread (an mqlite verb inside the
        caller's ``tx()``) is a SAVEPOINT, so a failing verb undoes only its own writes.
        Callbacks registered with ``after_commit`` run once the outermost block commits.
        """
        return _Transaction(self)

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` after the current outermost transaction commits (never on
        rollback). (``__init__`` binds the callback list's own ``append`` over this.)"""
        self._tx.after_commit.append(callback)

    def on_rollback(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` if the innermost open (sav)epoint rolls back, or any enclosing
        one does; dropped once the outermost transaction commits."""
        self._tx.on_rollback.append(callback)

    @property
    def in_transaction(self) -> bool:
        return self._tx.depth > 0

    def _commit(self, conn: sqlite3.Connection) -> None:
        """COMMIT the outermost transaction (a seam: tests inject a failing commit here;
        the crash drill's kill points sit on either side of it).

        On a remote store a COMMIT whose exchange was cut may have been applied or not:
        that is ``OutcomeUnknown``, never retried here and never reported as a rollback."""
        if killpoints._armed is not None:  # (unarmed: no call, every commit's path)
            killpoints.reached("commit.before")
        if not conn.in_transaction:
            raise self.lost()  # a COMMIT now would fail, or commit a stray transaction
        try:
            conn.execute("COMMIT")
        except TransactionLost:
            raise
        except RemoteUnreachable as exc:
            self.in_doubt = True
            raise errors.OutcomeUnknown(
                "the remote database did not acknowledge the commit: it may or may not have "
                "applied; reconcile by message id (dedup) before resending"
            ) from exc
        if killpoints._armed is not None:
            killpoints.reached("commit.after")

    def lost(self) -> sqlite3.OperationalError:
        """The error of a transaction that ended under its block (a remote stream lost, or
        SQLite rolled it back after an error): nothing of it committed."""
        if self.location.remote is not None:
            return TransactionLost(
                f"remote database {self.location.remote.masked}: the transaction was lost; "
                "nothing of it committed"
            )
        lost = sqlite3.OperationalError("the transaction was rolled back by SQLite")
        lost.sqlite_errorcode = 10  # SQLITE_IOERR: an "io" storage failure
        return lost

    def _reconcile(self, conn: sqlite3.Connection) -> None:
        """After a COMMIT of unknown outcome, reload what it may have stored (in the new
        transaction, before any block runs); kept in doubt until that succeeds."""
        if self.reconcile is not None:
            self.reconcile(conn)
        self.in_doubt = False

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        """The connection outside any transaction (pragmas like checkpoint/incremental_vacuum)."""
        with self.lock:
            if self._closed:
                raise errors.Closed()
            if self._tx.depth:
                raise errors.InvalidArgument("not allowed inside a transaction")
            yield self.conn

    def reader(self) -> sqlite3.Connection:
        """The connection for a read by the writer's holder, in or out of a transaction
        (callers are ``@serialized``; nothing written through it)."""
        if self._closed:
            raise errors.Closed()
        return self.conn

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Wait for in-flight work, checkpoint the WAL, close, then release the file lock."""
        with self.lock:
            if self._closed:
                return
            self._closed = True
            try:
                if self.location.path is not None:
                    # Closing must not fail on a busy checkpoint; the WAL stays valid.
                    with contextlib.suppress(sqlite3.Error):
                        self.conn.execute(self.checkpoint_sql)
                if self.lease is not None:
                    self.lease.release(self.conn)
                self.conn.close()
            finally:
                self._release_file_lock()

    def _release_file_lock(self) -> None:
        if self._file_lock is not None:
            self._file_lock.release()
            self._file_lock = None

    def db_size_bytes(self) -> int:
        """On-disk footprint (db + WAL + shm); 0 in memory."""
        if self.location.path is None:
            return 0
        total = 0
        for suffix in ("", "-wal", "-shm"):
            with suppress(OSError):
                total += os.path.getsize(self.location.path + suffix)
        return total


class _Transaction:
    """The context manager behind ``Store.transaction`` (a class, not a generator: it is
    on every call's path, and this saves a few microseconds per send)."""

    __slots__ = ("_commit_mark", "_store", "_undo_mark")

    def __init__(self, store: Store) -> None:
        self._store = store
        self._commit_mark = 0
        self._undo_mark = 0

    def __enter__(self) -> sqlite3.Connection:
        store = self._store
        store.lock.acquire()
        try:
            if store._closed:
                raise errors.Closed()
            state = store._tx
            if state.depth == 0:  # (the marks stay 0: the whole state is this block's)
                if store.lease is None and store.location.remote is None:
                    # Store._begin inlined for a local file (hot path); a remote store
                    # always goes through _begin (its lease, its own BEGIN).
                    store.conn.execute("BEGIN IMMEDIATE")
                else:
                    store._begin()  # (a lease renewal it ran commits with this block)
                if store.in_doubt:
                    try:
                        store._reconcile(store.conn)
                    except BaseException:
                        with suppress(sqlite3.Error):
                            store.conn.rollback()
                        raise
            elif not store.conn.in_transaction:
                # The outer transaction is gone: a SAVEPOINT would open a new one, and its
                # RELEASE commit this block alone (issue 26).
                raise store.lost()
            else:
                store.conn.execute(f"SAVEPOINT sp{state.depth}")
                self._commit_mark = len(state.after_commit)
                self._undo_mark = len(state.on_rollback)
            state.depth += 1
        except BaseException:
            store.lock.release()
            raise
        return store.conn

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        store = self._store
        state = store._tx
        conn = store.conn
        try:
            state.depth -= 1
            if exc_type is not None:
                try:
                    if state.depth == 0:
                        conn.rollback()  # (a lost one is only forgotten)
                    elif conn.in_transaction:  # else: nothing left to roll back to
                        conn.execute(f"ROLLBACK TO sp{state.depth}")
                        conn.execute(f"RELEASE sp{state.depth}")
                finally:
                    state.roll_back_to(self._commit_mark, self._undo_mark)
                return
            if state.depth > 0:
                if not conn.in_transaction:  # lost under a block that swallowed the error
                    state.roll_back_to(self._commit_mark, self._undo_mark)
                    raise store.lost()
                try:
                    conn.execute(f"RELEASE sp{state.depth}")
                except BaseException:
                    # A remote store's RELEASE carries the block's queued writes
                    # (remote_pipeline.py): one failed, so the block is undone, as if it
                    # had raised where it was queued.
                    try:
                        if conn.in_transaction:
                            conn.execute(f"ROLLBACK TO sp{state.depth}")
                            conn.execute(f"RELEASE sp{state.depth}")
                    finally:
                        state.roll_back_to(self._commit_mark, self._undo_mark)
                    raise
                return
            try:
                store._commit(conn)
            except BaseException:
                try:
                    conn.rollback()
                finally:
                    state.roll_back_to(0, 0)
                raise
            callbacks = state.after_commit.copy()
            state.after_commit.clear()  # in place: Store.after_commit is its bound append
            state.on_rollback.clear()
            # Still holding the writer: the next transaction must see what this one
            # published (catalog versions), and a wake-up must never precede it.
            for callback in callbacks:
                try:
                    callback()
                except Exception:  # committed is committed: a failing hook is logged only
                    log.exception("after-commit callback failed")
        finally:
            store.lock.release()


def check_lock_free(dsn: str, auth_token: str = "") -> None:
    """Raise ``DBLocked`` if another process holds the database (a pre-flight for serve):
    the file lock, or a live lease row on a remote server (unreachable: left to the open)."""
    location = parse_dsn(dsn)
    if location.path is not None:
        check_free(location.path)
    elif location.remote is not None:
        check_lease_free(location.remote, auth_token, SYSTEM_CLOCK.now_ms())
