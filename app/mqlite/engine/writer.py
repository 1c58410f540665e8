"""The one writer: every engine call is serialized here, with group commit.

A database has exactly one SQLite connection and every statement runs while holding ONE
lock, the *writer token* (the store's lock). The writer thread owns the token for
everything submitted to it: calls from an event loop (the HTTP server submits and awaits),
the maintenance scheduler's passes, and every synchronous call that finds the token busy.
Calls that queue up while the thread works run together inside ONE outer transaction,
each its own savepoint -- a failing call undoes only its own writes and gets its own
exception -- the batch commits once, and only then are the callers answered: a success is
never reported for a write that did not commit, and a failed commit fails every call of
the batch. Once the batch's transaction is lost (a remote stream cut, the server
restarted) nothing more of it runs: its COMMIT is not sent and every call is answered
"nothing committed" (a later call would otherwise open a new transaction and commit
alone: issue 26); a COMMIT whose answer was lost is ``OutcomeUnknown`` for every call.
Group commit turns N commits and N wake-ups into one of each under concurrency, for the server
and for threaded embedded users alike.

An uncontended synchronous call (the single-threaded embedded user) takes the free token
and runs inline on its own thread: the same serialization without a thread hop, which
costs ~30 µs on the CI machine, as much as the whole ``send_one`` it would carry.

No ``sqlite3`` exception leaves this module: each becomes an ``MQLiteError``
(``storage_errors.translate``), so no caller ever has to know the driver.
"""

from __future__ import annotations

import _thread
import asyncio
import contextlib
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from mqlite import errors
from mqlite.engine import killpoints
from mqlite.engine.measured_store import MeasuredStore
from mqlite.engine.signals import WriterSignals
from mqlite.engine.storage_errors import translate

T = TypeVar("T")

MAX_BATCH = 64  # calls per commit: bounds the latency one batch adds to the next


class _Call:
    """One queued call and how to answer it: a lock the waiting thread blocks on, or an
    asyncio future resolved on its loop."""

    __slots__ = ("args", "fn", "future", "kwargs", "lock", "loop", "ok", "value")

    def __init__(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        loop: asyncio.AbstractEventLoop | None = None,
        future: asyncio.Future[Any] | None = None,
    ) -> None:
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.loop, self.future = loop, future
        self.lock: Any = None
        self.ok = False
        self.value: Any = None

    def invoke(self, translate: Callable[[sqlite3.Error], BaseException]) -> None:
        try:
            self.value = self.fn(*self.args, **self.kwargs)
            self.ok = True
        except sqlite3.Error as exc:
            self.value = translate(exc)
        except BaseException as exc:
            self.value = exc


class Writer:
    """The writer thread plus the token; ``call``/``submit``/``hold`` are the only doors."""

    def __init__(self, store: MeasuredStore, on_full: Callable[[], None] | None = None) -> None:
        self._store = store
        self._on_full = on_full  # called when a write finds the disk full (disk.py)
        self._token = store.lock
        # SimpleQueue: a C-level put/get, cheaper per call than a Condition handshake.
        self._queue: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._owner = 0  # thread ident holding the token (0: nobody)
        self._taken = 0  # calls the thread took off the queue and waits to run
        self._stopping = False
        # Test signals (engine/signals.py): None in production, one read per batch (and per
        # queued call) where they would fire; a test attaches them to hear "batch formed /
        # committed" instead of polling.
        self.signals: WriterSignals | None = None
        self._thread = threading.Thread(target=self._run, name="mqlite-writer", daemon=True)
        self._thread.start()
        self.thread_ident = self._thread.ident or 0

    # -- the doors ----------------------------------------------------------------------

    def owned(self) -> bool:
        """True on the thread that holds the token (nested engine calls run directly)."""
        return self._owner == threading.get_ident()

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` serialized and return its result (blocking the calling thread)."""
        me = threading.get_ident()
        if self._owner == me:  # nested: already serialized (inside a call or a tx())
            return fn(*args, **kwargs)
        # Inline only when nobody waits: not even a call the thread took and holds for the
        # token (a caller in a loop -- a chunked redrive -- would otherwise starve it).
        if not self._taken and self._queue.empty() and self._token.acquire(False):
            self._owner = me
            try:
                return fn(*args, **kwargs)
            except sqlite3.Error as exc:
                raise self.translate(exc) from exc
            finally:
                self._owner = 0
                self._token.release()
        return self.call_on_thread(fn, *args, **kwargs)

    def call_on_thread(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` on the writer thread (joining its next batch) and wait for it."""
        if self.owned():
            return fn(*args, **kwargs)
        item = _Call(fn, args, kwargs)
        item.lock = _thread.allocate_lock()
        item.lock.acquire()
        self._put(item)
        item.lock.acquire()  # released by the writer thread once the batch committed
        if item.ok:
            return item.value  # type: ignore[no-any-return]
        raise item.value

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> asyncio.Future[T]:
        """Queue ``fn`` for the writer thread; the future resolves on the running loop."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._put(_Call(fn, args, kwargs, loop, future))
        return future

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """Own the token on this thread for a whole block (the outbox ``tx()``): the
        writer thread and every other caller wait until the block ends."""
        me = threading.get_ident()
        if self._owner == me:
            yield
            return
        if self._stopping:
            raise errors.Closed()
        with self._token:
            self._owner = me
            try:
                yield
            finally:
                self._owner = 0

    def stop(self) -> None:
        """Finish what is queued, then end the thread. Idempotent."""
        if not self._stopping:
            self._stopping = True
            self._queue.put(None)
        if self._thread is not threading.current_thread():
            self._thread.join()

    def translate(self, exc: sqlite3.Error) -> errors.MQLiteError:
        """``storage_errors.translate``, and a full disk reported to the disk guard."""
        err = translate(exc)
        if isinstance(err, errors.StorageFull) and self._on_full is not None:
            self._on_full()
        return err

    # -- the thread ---------------------------------------------------------------------

    def _put(self, item: _Call) -> None:
        if self._stopping:
            raise errors.Closed()
        self._queue.put(item)
        if self.signals is not None:
            self.signals.queued.fire(self.queued())

    def queued(self) -> int:
        """Calls waiting for the writer thread (queued, or taken and awaiting the token)."""
        return self._queue.qsize() + self._taken

    def busy(self, *, excluding: int = 0) -> bool:
        """Is the one connection in use (held by a thread other than ``excluding``, or
        awaited by queued calls)? The observation's pool gauges sample this."""
        owner = self._owner
        return (owner != 0 and owner != excluding) or self.queued() > 0

    def _run(self) -> None:
        calls = self._queue
        me = threading.get_ident()
        while True:
            first = calls.get()
            if first is None:
                return
            self._taken = 1
            if self.signals is not None:  # the count a put just signalled may have missed it
                self.signals.queued.fire(self.queued())
            with self._token:
                # Drain AFTER taking the token: everything that queued while the token was
                # busy joins this batch (that is what turns N commits into one).
                batch, done = [first], False
                while len(batch) < MAX_BATCH:
                    try:
                        item = calls.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:
                        done = True
                        break
                    batch.append(item)
                self._taken = 0
                self._owner = me
                signals = self.signals
                if signals is not None:
                    signals.batch_formed.fire(len(batch))
                try:
                    committed = self._execute(batch)
                finally:
                    self._owner = 0
            if signals is not None and committed:
                signals.batch_committed.fire(len(batch))
            _answer(batch)
            if self._store.in_doubt:
                self._reconcile()
            if done:
                return

    def _reconcile(self) -> None:
        """After a COMMIT of unknown outcome, reload what it may have stored at once (an
        empty transaction runs the store's reconcile), so a revoked key stops working
        without waiting for the next write; if the database is still away, the next
        transaction tries again."""
        with self._token:
            self._owner = threading.get_ident()
            try:
                with self._store.transaction():
                    pass
            except Exception:  # still unreachable: in doubt until a transaction opens
                pass
            finally:
                self._owner = 0

    def _execute(self, batch: list[_Call]) -> bool:
        """Run ``batch``; False when its outer transaction failed (nothing committed)."""
        if len(batch) == 1:  # no outer transaction needed: the call commits its own
            batch[0].invoke(self.translate)
            return True
        alone = [c for c in batch if getattr(c.fn, "outside_transaction", False)]
        if alone:  # a checkpoint or vacuum: after the batch, with no transaction open
            rest = [c for c in batch if c not in alone]
            committed = self._execute(rest) if rest else True
            for call in alone:
                call.invoke(self.translate)
            return committed
        try:
            with self._store.transaction(batch=True) as conn:  # not an operation of its own
                for i, call in enumerate(batch, 1):
                    call.invoke(self.translate)  # the engine's transaction nests as a savepoint
                    killpoints.reached("batch.call", i, len(batch))
                    if not conn.in_transaction:
                        break  # the batch's transaction is lost: run nothing more of it
        except BaseException as exc:
            failure = self.translate(exc) if isinstance(exc, sqlite3.Error) else exc
            for call in batch:  # nothing of the batch committed
                call.ok, call.value = False, failure
            return False
        return True


def _answer(batch: list[_Call]) -> None:
    by_loop: dict[asyncio.AbstractEventLoop, list[_Call]] = {}
    for call in batch:
        if call.loop is None:
            call.lock.release()
        else:
            by_loop.setdefault(call.loop, []).append(call)
    for loop, items in by_loop.items():
        # A closed loop (shutdown) raises RuntimeError: nobody is waiting for these.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_resolve_all, items)


def _resolve_all(items: list[_Call]) -> None:
    for call in items:
        future = call.future
        assert future is not None
        if future.done():
            continue  # the caller was cancelled; the write stands (at-least-once)
        if call.ok:
            future.set_result(call.value)
        else:
            future.set_exception(call.value)
