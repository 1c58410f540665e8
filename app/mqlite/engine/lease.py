"""One broker per remote database: a lease row (holder, expiry) instead of the file lock.

A local file is held by ``file_lock.py`` (the kernel drops it when the process dies, so it
needs no expiry). A remote libSQL server has no lock a client can hold across requests,
so the store keeps one row in ``broker_lease``:

- **Taken at open**, in one ``BEGIN IMMEDIATE`` transaction (the server's write lock makes
  the read-then-write atomic): a live lease of another holder refuses the open with
  ``DBLocked`` naming that holder and when its lease expires; an expired one (a broker
  that died without closing) is taken over.
- **Renewed** by the maintenance loop every ``LEASE_RENEW_INTERVAL_MS`` (a third of the
  lease, so two renewals can fail before it lapses), and inside any write transaction that
  starts after the local copy of the expiry has passed (the first statement of that
  transaction, so the check and the writes commit together or not at all).
- **Lost** when a renewal finds another holder (our lease lapsed and a new broker took
  it): the store fails closed -- every later transaction is refused with ``DBLocked``
  before it sends a statement, and ``mqlite serve`` exits (``server``'s lease watch).
- **Released** at close (the row deleted if it is still ours), so the next broker opens at
  once instead of waiting for the expiry.

The table exists only on remote stores: a local file keeps exactly the schema of its token
(the golden dump, shared with the original and the backups), and its flock already does
the job. It is created here with ``IF NOT EXISTS``; a mqlite without it ignores the table.
Expiries are wall-clock ms of the injected clock; brokers on one database are assumed to
have clocks within a few seconds of each other (the lease is 30 s).
"""

from __future__ import annotations

import os
import socket
import sqlite3
import uuid
from collections.abc import Callable
from contextlib import suppress
from datetime import UTC, datetime

from mqlite import defaults, errors
from mqlite.engine.remote import RemoteConnection, RemoteTarget, RemoteUnreachable

DDL = (
    "CREATE TABLE IF NOT EXISTS broker_lease ("
    "id INTEGER PRIMARY KEY CHECK (id = 1), "
    "holder TEXT NOT NULL, "
    "expires_at INTEGER NOT NULL) STRICT"
)
_READ = "SELECT holder, expires_at FROM broker_lease WHERE id = 1"
_UPSERT = (
    "INSERT INTO broker_lease(id, holder, expires_at) VALUES (1, ?, ?) "
    "ON CONFLICT(id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at"
)
_RENEW = "UPDATE broker_lease SET expires_at = ? WHERE id = 1 AND holder = ?"
_RELEASE = "DELETE FROM broker_lease WHERE id = 1 AND holder = ?"

OnCommit = Callable[[], None]


# The broker's name for its lease, chosen by ``mqlite serve``'s master before it forks the
# worker (``name_this_broker``): a worker gunicorn starts in place of a dead one (a crash,
# the OOM killer) holds the lease under the same name and takes over the dead worker's
# live lease, instead of being refused by it for a whole lease (which ended the broker:
# "Worker failed to boot"). The master runs exactly one worker at a time, and starts a
# replacement only once it has reaped the dead one. A module global, not an environment
# variable: gunicorn forks its workers without exec, so they inherit the master's memory
# (and only ``config.py`` touches the process environment, tests/repo/test_house_guards.py).
_broker_name: str | None = None


def _fresh_holder_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def new_holder_id() -> str:
    """Who holds the lease, as an operator reads it: host, pid (serve's master), and a
    random suffix (two opens in one process outside serve are two holders)."""
    return _broker_name or _fresh_holder_id()


def name_this_broker() -> None:
    """In ``serve``'s master, before forking: every worker it starts holds one name."""
    global _broker_name
    _broker_name = _fresh_holder_id()


def _when(ms: int, now_ms: int) -> str:
    at = datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds")
    return f"{at} (in {max(0, ms - now_ms + 999) // 1000} s)"


def held_by(where: str, holder: str, expires_at: int, now_ms: int) -> errors.DBLocked:
    return errors.DBLocked(
        f"the remote database {where} is held by another mqlite broker ({holder}); its "
        f"lease expires at {_when(expires_at, now_ms)} unless renewed: one broker per "
        "database (stop the other broker, or wait for its lease to expire)"
    )


def check_free(target: RemoteTarget, auth_token: str, now_ms: int) -> None:
    """Read-only (``serve``'s pre-flight, before it forks a worker): ``DBLocked`` if any
    broker's lease on the database is live; ``StorageUnreachable`` if the server cannot
    be reached (after the safe retries) and ``StorageError`` if it refuses the token, so
    a broker that cannot start says why in one line instead of a worker's traceback."""
    conn = RemoteConnection(target, auth_token)
    try:
        try:
            found = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'broker_lease'")
            if found.fetchone():
                row = conn.execute(_READ).fetchone()
                if row is not None and int(row[1]) > now_ms:
                    raise held_by(target.masked, str(row[0]), int(row[1]), now_ms)
        except RemoteUnreachable as exc:
            raise errors.StorageUnreachable(
                f"{exc}: the broker cannot start without its database"
            ) from None
        except sqlite3.OperationalError as exc:
            if getattr(exc, "sqlite_errorcode", None) != 3:  # SQLITE_PERM: a refused token
                return  # anything else is left to the open, which reports it
            raise errors.StorageError(
                f"{exc}: the server refused the credentials (check MQLITE_DB_AUTH_TOKEN)",
                category="io",
            ) from None
    finally:
        conn.close()


class Lease:
    """This store's lease on a remote database; ``valid_until`` is the expiry last
    committed (ms of the injected clock)."""

    def __init__(
        self,
        where: str,
        now_ms: Callable[[], int],
        *,
        holder: str | None = None,
        ttl_ms: int = defaults.LEASE_TTL_MS,
    ) -> None:
        self.where = where
        self.now_ms = now_ms
        self.holder = holder or new_holder_id()
        self.ttl_ms = ttl_ms
        self.valid_until = 0
        self.lost: errors.DBLocked | None = None  # set once; the store stays fenced

    def take(self, conn: sqlite3.Connection) -> None:
        """At open, in its own transaction: create the table, refuse a live lease of
        another holder, else write ours."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(DDL)
            now = self.now_ms()
            row = conn.execute(_READ).fetchone()
            if row is not None and row[0] != self.holder and int(row[1]) > now:
                raise held_by(self.where, str(row[0]), int(row[1]), now)
            conn.execute(_UPSERT, (self.holder, now + self.ttl_ms))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self.valid_until = now + self.ttl_ms

    def begin(self, conn: sqlite3.Connection, after_commit: Callable[[OnCommit], None]) -> None:
        """Open a write transaction: refused before any statement once the lease is lost;
        renewed first, inside it, once the local copy of the expiry has passed (so the
        check and the writes commit together or not at all)."""
        if self.lost is not None:
            raise self.lost
        conn.execute("BEGIN IMMEDIATE")
        if self.now_ms() >= self.valid_until:
            try:
                self.renew_in(conn, after_commit)
            except BaseException:
                with suppress(sqlite3.Error):
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                raise

    def renew_in(self, conn: sqlite3.Connection, after_commit: Callable[[OnCommit], None]) -> None:
        """Renew inside the caller's transaction; ``valid_until`` moves once it commits."""
        until = self.renew(conn)
        after_commit(lambda: setattr(self, "valid_until", until))

    def renew(self, conn: sqlite3.Connection) -> int:
        """Inside the caller's transaction: push the expiry out; the new expiry (applied
        to ``valid_until`` by the caller once it commits). Another holder in the row (or
        no row: it was released or dropped) loses the lease for good."""
        now = self.now_ms()
        until = now + self.ttl_ms
        if conn.execute(_RENEW, (until, self.holder)).rowcount == 1:
            return until
        row = conn.execute(_READ).fetchone()
        holder, expires = ("nobody", now) if row is None else (str(row[0]), int(row[1]))
        self.lost = errors.DBLocked(
            f"this broker lost its lease on the remote database {self.where} (now held by "
            f"{holder}, until {_when(expires, now)}): it stopped writing; restart it once "
            "the other broker is gone"
        )
        raise self.lost

    def release(self, conn: sqlite3.Connection) -> None:
        """At close (no transaction open): delete the row if it is still ours. A server
        out of reach is no error here: the lease then expires by itself."""
        if self.lost is None:
            with suppress(sqlite3.Error):
                conn.execute(_RELEASE, (self.holder,))
