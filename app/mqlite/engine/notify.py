""" "Queue Q has work" signals for long polls (in-process, single broker).

A waiter registers a callback for one queue. ``notify(queue, n)`` fires and drops at most
``n`` waiters, oldest first: a commit that made ``n`` messages claimable wakes ``n``
waiters, never the whole herd (a thousand parked polls woken by every send would each
claim on the writer and find nothing). ``notify(queue)`` with no count wakes everyone (the
queue was deleted, the broker is closing). The callback form serves both worlds: a thread
waits on a ``threading.Event`` it sets, an asyncio server schedules a future with
``call_soon_threadsafe``.

Two rules keep bounded wake-ups from losing work:

- register BEFORE the last claim attempt, so a send that lands in between is seen;
- a waiter that was fired but leaves without claiming afterwards (deadline, disconnect,
  drain, or a claim that raced the wake) hands its wake on: ``Waiter.cancel`` returns
  whether it fired, and the receive loop then calls ``notify(queue, 1)``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping

Callback = Callable[[], None]


class Waiter:
    """One registration; ``cancel()`` it when the wait ends. ``fired`` tells whether it was
    woken (the wake is then this waiter's to use or to hand on)."""

    __slots__ = ("_callback", "_notifier", "fired", "queue")

    def __init__(self, notifier: Notifier, queue: str, callback: Callback) -> None:
        self._notifier = notifier
        self.queue = queue
        self._callback = callback
        self.fired = False

    def fire(self) -> None:
        self.fired = True
        self._callback()

    def cancel(self) -> bool:
        """Deregister; True if the waiter had been fired."""
        self._notifier._remove(self)
        return self.fired


class Notifier:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parked = threading.Condition(self._lock)  # a test signal: someone registered
        # queue -> waiters in registration order (a dict is an ordered set)
        self._waiters: dict[str, dict[Waiter, None]] = {}
        # The same map, for a lock-free "is anyone parked on this queue?" (``queue in
        # parked``: notify's own first test) by a caller saving the call when nobody is.
        # Read-only outside this class; never replaced (emptied in place).
        self.parked: Mapping[str, object] = self._waiters
        self._closed = False

    def register(self, queue: str, callback: Callback) -> Waiter:
        waiter = Waiter(self, queue, callback)
        with self._lock:
            closed = self._closed
            if not closed:
                self._waiters.setdefault(queue, {})[waiter] = None
                self._parked.notify_all()
        if closed:
            waiter.fire()
        return waiter

    def _remove(self, waiter: Waiter) -> None:
        with self._lock:
            waiters = self._waiters.get(waiter.queue)
            if waiters is not None:
                waiters.pop(waiter, None)
                if not waiters:
                    del self._waiters[waiter.queue]

    def notify(self, queue: str, count: int | None = None) -> None:
        """Wake at most ``count`` waiters of ``queue`` (all when None), oldest first."""
        if queue not in self._waiters:
            # Nobody parked (every send's path): no lock. A poll registering meanwhile
            # claims after registering, on the writer this commit's holder still owns,
            # so it sees what was committed (the register-before-claim rule above).
            return
        with self._lock:
            waiters = self._waiters.get(queue)
            if not waiters:
                return
            if count is None or count >= len(waiters):
                chosen = list(waiters)
                del self._waiters[queue]
            else:
                chosen = []
                for waiter in waiters:
                    if len(chosen) >= count:
                        break
                    chosen.append(waiter)
                for waiter in chosen:
                    del waiters[waiter]
        for waiter in chosen:
            waiter.fire()

    def notify_counts(self, counts: Mapping[str, int]) -> None:
        """Wake, per queue, as many waiters as that queue gained claimable messages."""
        for queue, count in counts.items():
            if count > 0:
                self.notify(queue, count)

    def notify_all(self, queues: Iterable[str]) -> None:
        for queue in queues:
            self.notify(queue)

    def close(self) -> None:
        """Wake everyone (they observe the engine closed) and refuse new registrations."""
        with self._lock:
            self._closed = True
            everyone = [w for ws in self._waiters.values() for w in ws]
            self._waiters.clear()
        for waiter in everyone:
            waiter.fire()

    def waiting(self, queue: str) -> int:
        with self._lock:
            return len(self._waiters.get(queue, ()))

    def wait_for_waiters(self, queue: str, count: int = 1, timeout_s: float = 5.0) -> bool:
        """Block until ``count`` waiters are parked on ``queue`` (a test signal, so tests
        never poll or sleep to learn that a long poll has parked)."""
        with self._parked:
            return self._parked.wait_for(
                lambda: len(self._waiters.get(queue, ())) >= count, timeout_s
            )
