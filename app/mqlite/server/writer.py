"""The single writer thread, with group commit.

Every engine call from the event loop is queued here and runs on ONE thread, so the loop
never blocks on SQLite and statements never interleave. Calls that queue up while the
thread is busy run together inside one outer transaction: each call is its own savepoint
(a failing call undoes only its own writes and gets its own exception), the batch commits
once, and only then are the callers answered -- a success is never reported for a write
that did not commit. Under concurrent load this turns N commits and N thread wake-ups
into one of each; with a single caller it is an ordinary transaction per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mqlite.engine.store import Store

MAX_BATCH = 64  # calls per commit: bounds the latency one batch adds to the next


@dataclass(slots=True)
class _Call:
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]


class Writer:
    def __init__(self, store: Store) -> None:
        self._store = store
        # SimpleQueue: a C-level put/get, cheaper per call than a Condition handshake.
        self._queue: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="mqlite-writer", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> asyncio.Future[Any]:
        if self._stopping:
            raise RuntimeError("writer stopped")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._queue.put(_Call(fn, args, kwargs, loop, future))
        return future

    def stop(self) -> None:
        """Finish what is queued, then end the thread."""
        self._stopping = True
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        calls = self._queue
        while True:
            item = calls.get()
            batch: list[_Call] = []
            done = item is None
            if item is not None:
                batch.append(item)
            while not done and len(batch) < MAX_BATCH:
                try:
                    item = calls.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    done = True
                else:
                    batch.append(item)
            if batch:
                self._answer(batch, self._execute(batch))
            if done:
                return

    def _execute(self, batch: list[_Call]) -> list[tuple[bool, Any]]:
        if len(batch) == 1:  # no outer transaction needed: the call commits its own
            call = batch[0]
            try:
                return [(True, call.fn(*call.args, **call.kwargs))]
            except BaseException as exc:
                return [(False, exc)]
        results: list[tuple[bool, Any]] = []
        try:
            with self._store.transaction():
                for call in batch:
                    try:
                        # The engine's own transaction nests as a savepoint.
                        results.append((True, call.fn(*call.args, **call.kwargs)))
                    except BaseException as exc:
                        results.append((False, exc))
        except BaseException as exc:
            return [(False, exc)] * len(batch)
        return results

    @staticmethod
    def _answer(batch: list[_Call], results: list[tuple[bool, Any]]) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[_Call, bool, Any]]] = {}
        for call, (ok, value) in zip(batch, results, strict=True):
            by_loop.setdefault(call.loop, []).append((call, ok, value))
        for loop, items in by_loop.items():
            # A closed loop (shutdown) raises RuntimeError: nobody is waiting for these.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_resolve_all, items)


def _resolve_all(items: list[tuple[_Call, bool, Any]]) -> None:
    for call, ok, value in items:
        if call.future.done():
            continue  # the caller was cancelled; the write stands (at-least-once)
        if ok:
            call.future.set_result(value)
        else:
            call.future.set_exception(value)
