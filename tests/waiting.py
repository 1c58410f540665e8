"""How a test waits: for a signal, never for a guess of how long something takes.

In one process a test waits on what the code under test signals (a ``threading.Event`` or
``Condition`` set by a hook, the writer's test signals -- ``mqlite.engine.signals``:
"call queued", "batch formed", "batch committed" -- the Receiver's condition, an
``asyncio.Event``), with a deadline so a missing signal fails the test instead of hanging
it; time itself comes from the ``FakeClock``. Only a *real process* (a broker, sqld, the
CLI, a child interpreter) has no hook to signal through, so polling it is allowed, for
its real condition, through one clearly named helper: ``poll_real_process``.
``tests/repo/test_house_guards.py`` fails on any other ``time.sleep`` / ``asyncio.sleep``
/ sleep in disguise outside the directories of real processes' end-to-end tests.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from mqlite.engine.signals import WriterSignals

POLL_INTERVAL_S = 0.05
DEADLINE_S = 10.0  # a hang guard for in-process signals (they come in milliseconds)


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


class BatchRun:
    """The calls ``one_batch`` gathers: ``start(fn)`` runs ``fn`` on a thread of its own
    (it calls through the held writer, so it queues); ``signals`` are the writer's."""

    def __init__(self, signals: WriterSignals) -> None:
        self.signals = signals
        self.threads: list[threading.Thread] = []

    def start(self, fn: Callable[[], None]) -> None:
        t = threading.Thread(target=fn, daemon=True)
        self.threads.append(t)
        t.start()


@contextlib.contextmanager
def one_batch(writer: Any, what: str = "the batch") -> Iterator[BatchRun]:
    """Run the calls the block starts (``BatchRun.start``) as ONE group-commit batch.

    The writer is held for the block; on leaving it, once the writer's ``queued`` signal
    counts every call, it is released and the writer thread takes them all in one batch
    (its ``batch_formed`` signal says how many: all of them, or this fails), and the
    callers are joined. ``BatchRun.signals.batch_committed`` then says whether it
    committed."""
    run = BatchRun(WriterSignals.attach(writer))
    try:
        with writer.hold():
            yield run
            n = len(run.threads)
            run.signals.queued.wait_for(lambda q: q >= n, f"{n} calls queued for {what}")
        formed = run.signals.batch_formed.next(what)
        assert formed == n, f"{what}: one batch of {formed} calls, not {n}"
        for t in run.threads:
            t.join(DEADLINE_S)
            assert not t.is_alive(), f"a call of {what} never returned"
    finally:
        WriterSignals.detach(writer)


def wait_for_receiver(
    receiver: Any, predicate: Callable[[Any], bool], what: str, deadline_s: float = DEADLINE_S
) -> None:
    """Wait until ``predicate(receiver.stats())`` holds. The Receiver notifies its one
    condition whenever a message leaves its hands (settled, its counters updated, its
    slot freed), so the test wakes on that change, not on a timer."""
    wait_for_condition(receiver._cond, lambda: predicate(receiver.stats()), what, deadline_s)


def wake_receiver(receiver: Any) -> None:
    """After a ``FakeClock`` step: wake the Receiver's threads now. Their timed waits (the
    renewer's next pass, a pause) sleep on the Receiver's condition for a real-time
    timeout computed from the clock; notified, they re-read the clock and act on the new
    time at once."""
    with receiver._cond:
        receiver._cond.notify_all()
