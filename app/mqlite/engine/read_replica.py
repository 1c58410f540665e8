"""Read scale-out on a remote store: reads that tolerate staleness (Peek, Stats, Observe's
collection, ListQueues) on a libSQL replica (``MQLITE_DB_REPLICA``), off the one writer.

Why a replica and why these reads: on a remote store every read under the writer costs a
network round trip during which no send, claim or settlement can run. A replica (sqld
started with ``--primary-grpc-url``) follows the primary's log a few milliseconds behind
(docs/remote.md gives the measured bound), which browsing and counting tolerate; claims,
settlements and every write stay on the primary, and so does anything that must see its
own writes (the catalog, dedup, receipts).

The replica gets a small pool of its own connections (``defaults.REPLICA_CONNECTIONS``:
with the writer's one, the pool of 4 of docs/architecture.md, "One writer"), each used by
one thread at a time; a caller waits for a free one, and those waits are the observation's
pool waits. A replica that cannot be reached fails the read (503, naming the replica):
reads are not silently moved to the primary, whose load the replica exists to spare.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from time import perf_counter

from mqlite import defaults, errors
from mqlite.engine.measure import StorageOps
from mqlite.engine.remote import RemoteConnection, RemoteTarget, is_remote, parse_remote


class ReplicaReads:
    """A bounded pool of connections to one replica; ``read()`` lends one."""

    def __init__(
        self,
        dsn: str,
        auth_token: str,
        ops: StorageOps,
        *,
        size: int = defaults.REPLICA_CONNECTIONS,
    ) -> None:
        if not is_remote(dsn):
            raise errors.InvalidArgument(
                "MQLITE_DB_REPLICA must be the URL of a libSQL replica "
                "(libsql://, https:// or http://)"
            )
        self.target: RemoteTarget = parse_remote(dsn)
        self._auth_token = auth_token  # the primary's: never logged
        self._ops = ops
        self.size = size
        self._idle: list[RemoteConnection] = []
        self.open = 0
        self.in_use = 0
        self.waits = 0
        self.wait_seconds = 0.0
        self._closed = False
        self._cond = threading.Condition()

    @contextmanager
    def read(self) -> Iterator[RemoteConnection]:
        """A replica connection for one read (a ``read`` storage operation, with its
        retries); waits while all ``size`` are lent."""
        conn = self._acquire()
        started = perf_counter()
        before = conn.retries
        try:
            yield conn
        except BaseException as exc:
            self._ops.failed("read", perf_counter() - started, exc, conn.retries - before)
            self._release(conn)
            raise
        self._ops.ok("read", perf_counter() - started, conn.retries - before)
        self._release(conn)

    def _acquire(self) -> RemoteConnection:
        with self._cond:
            if not self._idle and self.open >= self.size and not self._closed:
                self.waits += 1
                started = perf_counter()
                while not self._idle and self.open >= self.size and not self._closed:
                    self._cond.wait()
                self.wait_seconds += perf_counter() - started
            if self._closed:
                raise errors.Closed()
            self.in_use += 1
            if self._idle:
                return self._idle.pop()
            self.open += 1
        try:
            return RemoteConnection(self.target, self._auth_token)
        except BaseException:
            with self._cond:
                self.open -= 1
                self.in_use -= 1
                self._cond.notify()
            raise

    def _release(self, conn: RemoteConnection) -> None:
        with self._cond:
            self.in_use -= 1
            if self._closed:
                self.open -= 1
                conn.close()
            else:
                self._idle.append(conn)
            self._cond.notify()

    def close(self) -> None:
        """Close the idle connections; lent ones close when they come back."""
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self.open -= len(idle)
            self._cond.notify_all()
        for conn in idle:
            conn.close()
