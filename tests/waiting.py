"""How a test waits: for a signal, never for a guess of how long something takes.

In one process a test waits on what the code under test signals (a ``threading.Event`` or
``Condition`` set by a hook, the writer's ``on_commit``, an ``asyncio.Event``), with a
deadline so a missing signal fails the test instead of hanging it; time itself comes from
the ``FakeClock``. Only a *real process* (a broker, sqld, the CLI, a child interpreter)
has no hook to signal through, so polling it is allowed, through one clearly named helper:
``poll_real_process``. ``tests/repo/test_house_guards.py`` fails on any other
``time.sleep`` / ``asyncio.sleep`` / ``Event().wait(n)`` outside the directories of real
processes' end-to-end tests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

POLL_INTERVAL_S = 0.05


def poll_real_process(
    what: str,
    probe: Callable[[], bool],
    *,
    deadline_s: float,
    interval_s: float = POLL_INTERVAL_S,
) -> None:
    """Ask ``probe`` (about another process: a port, a file, a health endpoint) until it
    answers True; AssertionError naming ``what`` once ``deadline_s`` has passed. ``probe``
    may raise to end the wait early (the process exited)."""
    deadline = time.monotonic() + deadline_s
    while not probe():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {deadline_s} s waiting for {what}")
        time.sleep(interval_s)


def wait_for_condition(
    cond: threading.Condition, predicate: Callable[[], bool], what: str, deadline_s: float
) -> None:
    """``cond.wait_for(predicate)`` that fails naming ``what`` instead of returning False:
    the code under test calls ``cond.notify_all()`` when the state ``predicate`` reads
    changes, so the test wakes on the change, not on a timer."""
    with cond:
        if not cond.wait_for(predicate, timeout=deadline_s):
            raise AssertionError(f"timed out after {deadline_s} s waiting for {what}")


class SignallingQueue:
    """Wraps the writer's call queue (``engine.writer._queue``): every ``put`` notifies
    ``cond``, so a test waits for "N calls queued for the batch" (``writer.queued()``) as a
    signal instead of polling it. Test-side only: the writer pays nothing for it. The
    writer thread keeps reading the wrapped queue it started with."""

    def __init__(self, inner: Any, cond: threading.Condition) -> None:
        self._inner, self._cond = inner, cond

    def put(self, item: Any) -> None:
        self._inner.put(item)
        with self._cond:
            self._cond.notify_all()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
