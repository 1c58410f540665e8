"""The store as the engine uses it: every storage operation measured (observability,
"Metric contract": storage operations by operation, outcome and error code).

A subclass rather than edits to ``store.py``: the store's transaction machinery stays as
it is and this only wraps its three doors --

- ``transaction()``: one ``transaction`` operation per engine call's block. A block nested
  in another (an engine call inside the writer's group-commit batch, or a verb inside the
  outbox ``tx()``) is counted as ok only once the outermost block COMMITs (an after-commit
  callback: a rolled-back parent drops it); its failure is counted at once. The writer's
  batch wrapper itself is not an operation (``batch=True``): only a failure of its COMMIT
  is counted, once.
- ``connection()``: a ``write`` operation (checkpoint, incremental vacuum, VACUUM).
- ``read()``: a ``read`` operation (the observation's collection and read probe).

Retries: a remote connection counts its safe retries (``remote.py``); each recorded
operation takes the ones made since the previous record (a retried ``BEGIN`` of the
writer's batch goes to the first call of the batch, the operation it served).

``fault`` is the one test seam: a callable run at the start of every operation, which
may raise a driver error (``tests/ops/faulty_serve.py`` makes the database "unreadable"
that way in a real broker process). It is None in production.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from time import perf_counter
from typing import ClassVar

from mqlite import errors
from mqlite.engine.measure import StorageOps
from mqlite.engine.store import Store, _Transaction


class MeasuredStore(Store):
    fault: ClassVar[Callable[[str], None] | None] = None

    def __init__(
        self,
        dsn: str,
        *,
        sync: str | None,
        ops: StorageOps,
        checkpoint: str = "TRUNCATE",
        auth_token: str = "",
        now_ms: Callable[[], int] | None = None,
    ) -> None:
        self.ops = ops
        self._retries_seen = 0
        super().__init__(
            dsn, sync=sync, checkpoint=checkpoint, auth_token=auth_token, now_ms=now_ms
        )
        self.retrying = self.location.remote is not None  # only a remote connection retries
        self.transaction_ok = ops.ok_on_writer("transaction")

    def new_retries(self) -> int:
        """Safe retries of the connection since the last call (0 on a local file)."""
        total: int = getattr(self.conn, "retries", 0)
        new, self._retries_seen = total - self._retries_seen, total
        return new

    def transaction(self, *, batch: bool = False) -> _MeasuredTransaction:
        return _MeasuredTransaction(self, batch)

    @contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        started = perf_counter()
        try:
            with super().connection() as conn:
                if MeasuredStore.fault is not None:
                    MeasuredStore.fault("write")
                yield conn
        except BaseException as exc:
            self.ops.failed("write", perf_counter() - started, exc, self.new_retries())
            raise
        self.ops.ok("write", perf_counter() - started, self.new_retries())

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """The connection for reads, under the writer token (inside the writer's batch
        transaction when there is one, else autocommit reads)."""
        with self.lock:
            started = perf_counter()
            try:
                if self.closed:
                    raise errors.Closed()
                if MeasuredStore.fault is not None:
                    MeasuredStore.fault("read")
                yield self.conn
            except BaseException as exc:
                self.ops.failed("read", perf_counter() - started, exc, self.new_retries())
                raise
            self.ops.ok("read", perf_counter() - started, self.new_retries())


class _MeasuredTransaction(_Transaction):
    """``Store``'s own transaction plus the measurement: a subclass rather than a wrapper
    around one, so a block costs one object and no extra calls (every call's path)."""

    __slots__ = ("_batch", "_started")

    def __init__(self, store: MeasuredStore, batch: bool) -> None:
        self._store = store
        self._commit_mark = 0
        self._undo_mark = 0
        self._batch = batch  # (_started: set first thing by __enter__)

    def __enter__(self) -> sqlite3.Connection:
        self._started = perf_counter()
        try:
            conn = _Transaction.__enter__(self)
        except BaseException as exc:
            self._failed(exc)
            raise
        if MeasuredStore.fault is not None:
            try:
                MeasuredStore.fault("transaction")
            except BaseException as exc:
                _Transaction.__exit__(self, type(exc), exc, exc.__traceback__)
                self._failed(exc)
                raise
        return conn

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:  # type: ignore[override]
        try:
            _Transaction.__exit__(self, exc_type, exc, tb)
        except BaseException as failure:  # the COMMIT (or a ROLLBACK) failed
            self._failed(failure)
            raise
        if self._batch:
            return  # each call of the batch is its own operation
        if exc is not None:
            self._failed(exc)
            return
        seconds = perf_counter() - self._started
        store: MeasuredStore = self._store  # type: ignore[assignment]
        record = store.transaction_ok
        if store._tx.depth:  # nested (the block's own depth is left already)
            store.after_commit(lambda: record(seconds, store.new_retries()))
        else:  # (a file never retries: no call for it on the hot path)
            record(seconds, store.new_retries() if store.retrying else 0)

    def _failed(self, exc: BaseException) -> None:
        if self._batch and not isinstance(exc, sqlite3.Error | errors.StorageError):
            return  # a call of the batch raised: that call's own block counted it
        store: MeasuredStore = self._store  # type: ignore[assignment]
        store.ops.failed("transaction", perf_counter() - self._started, exc, store.new_retries())
