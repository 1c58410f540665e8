"""Test signals: the engine tells a test that something happened, instead of the test
guessing how long it takes (River's ``testsignal`` idea). TEST-ONLY.

A component that has signals holds ``signals = None``; production never sets it, so
what each signal costs there is one attribute read and a compare at the place it would
fire (per batch for the writer's, never per SQL statement). A test switches them on with
``WriterSignals.attach(engine.writer)`` and waits on what it needs, with a deadline, so a
signal that never comes fails the test instead of hanging it::

    signals = WriterSignals.attach(eng.writer)
    ... start four callers while the writer is held ...
    signals.queued.wait_for(lambda n: n >= 4, "four calls queued")
    ... release the writer ...
    assert signals.batch_formed.next("the batch") == 4
    signals.batch_committed.next("its commit")

The writer's signals (engine/writer.py):

- ``queued``: a call was put on the writer's queue (value: calls now waiting for the
  writer thread, ``Writer.queued()``);
- ``batch_formed``: the writer thread drained its queue under the token (value: the
  batch's size), before any call of it ran;
- ``batch_committed``: the batch's writes are committed (value: its size), before its
  callers are answered: its outer transaction committed (a failed call's savepoint was
  undone inside it), or a batch of one ran its call in the call's own transaction. A
  batch whose transaction failed (nothing of it committed) is not signalled.

A call that finds the writer free runs inline on its own thread: no queue, no batch, no
signal. A test that needs a batch holds the writer (``Writer.hold``) while it queues.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

DEADLINE_S = 10.0  # a hang guard: a signal that should come comes in milliseconds


class Signal(Generic[T]):
    """One kind of event: every value fired is kept, in order, for the test to read."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._cond = threading.Condition()
        self._values: list[T] = []
        self._taken = 0

    def fire(self, value: T) -> None:
        with self._cond:
            self._values.append(value)
            self._cond.notify_all()

    @property
    def values(self) -> list[T]:
        """Every value fired so far."""
        with self._cond:
            return list(self._values)

    def next(self, what: str = "", deadline_s: float = DEADLINE_S) -> T:
        """The first value not yet taken by ``next``, waiting for it if need be."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self._values) > self._taken, deadline_s):
                raise TimeoutError(self._timed_out(what, deadline_s))
            self._taken += 1
            return self._values[self._taken - 1]

    def wait_for(
        self, predicate: Callable[[T], bool], what: str = "", deadline_s: float = DEADLINE_S
    ) -> T:
        """The first value fired (before or after this call) that ``predicate`` accepts."""
        found: list[T] = []

        def seen() -> bool:
            found[:] = [v for v in self._values if predicate(v)][:1]
            return bool(found)

        with self._cond:
            if not self._cond.wait_for(seen, deadline_s):
                raise TimeoutError(self._timed_out(what, deadline_s))
            return found[0]

    def _timed_out(self, what: str, deadline_s: float) -> str:
        return f"no {self.name} signal ({what or 'any'}) within {deadline_s} s: {self._values}"


class WriterSignals:
    """The writer's signals (see the module docstring)."""

    def __init__(self) -> None:
        self.queued: Signal[int] = Signal("queued")
        self.batch_formed: Signal[int] = Signal("batch formed")
        self.batch_committed: Signal[int] = Signal("batch committed")

    @classmethod
    def attach(cls, writer: Any) -> WriterSignals:
        """Switch ``writer``'s signals on (fresh ones); ``detach`` switches them off."""
        signals = cls()
        writer.signals = signals
        return signals

    @staticmethod
    def detach(writer: Any) -> None:
        writer.signals = None
