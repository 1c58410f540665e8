""" "Queue Q may have work" signals for long polls (in-process, single broker).

A waiter registers a callback for one queue; ``notify(queue)`` calls and drops every
callback registered for it (a broadcast, like closing a channel). The callback form serves
both worlds: a thread waits on a ``threading.Event`` it sets, an asyncio server schedules a
future with ``call_soon_threadsafe``. Register BEFORE the last claim attempt so a send that
lands in between is never a lost wake-up.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

Callback = Callable[[], None]


class Waiter:
    """One registration; ``cancel()`` it when the wait ends for another reason."""

    __slots__ = ("_callback", "_notifier", "queue")

    def __init__(self, notifier: Notifier, queue: str, callback: Callback) -> None:
        self._notifier = notifier
        self.queue = queue
        self._callback = callback

    def fire(self) -> None:
        self._callback()

    def cancel(self) -> None:
        self._notifier._remove(self)


class Notifier:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._parked = threading.Condition(self._lock)  # a test signal: someone registered
        self._waiters: dict[str, set[Waiter]] = {}
        self._closed = False

    def register(self, queue: str, callback: Callback) -> Waiter:
        waiter = Waiter(self, queue, callback)
        with self._lock:
            closed = self._closed
            if not closed:
                self._waiters.setdefault(queue, set()).add(waiter)
                self._parked.notify_all()
        if closed:
            waiter.fire()
        return waiter

    def _remove(self, waiter: Waiter) -> None:
        with self._lock:
            waiters = self._waiters.get(waiter.queue)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._waiters[waiter.queue]

    def notify(self, queue: str) -> None:
        with self._lock:
            waiters = self._waiters.pop(queue, None)
        for waiter in waiters or ():
            waiter.fire()

    def notify_many(self, queues: Iterable[str]) -> None:
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
