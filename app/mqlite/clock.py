"""Injectable time: the only module allowed to read the wall clock.

The engine reads ``clock.now_ms()`` (epoch milliseconds, UTC) for every business time and
``clock.monotonic_ms()`` only to pace waits. Tests pass a ``FakeClock`` and move time with
``advance(ms)``; advancing also moves the fake monotonic reading, so a long poll parked on a
fake clock sees its deadline come closer.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int: ...

    def monotonic_ms(self) -> float: ...

    def sleep_ms(self, ms: int) -> None: ...


class SystemClock:
    """The real clock."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> float:
        return time.monotonic() * 1000.0

    def sleep_ms(self, ms: int) -> None:
        time.sleep(max(ms, 0) / 1000.0)


class FakeClock:
    """A thread-safe clock that moves only when told to (``advance``/``set``)."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._lock = threading.Lock()
        self._now_ms = int(start_ms)
        self._advanced_ms = 0

    def now_ms(self) -> int:
        with self._lock:
            return self._now_ms

    def monotonic_ms(self) -> float:
        with self._lock:
            return time.monotonic() * 1000.0 + self._advanced_ms

    def advance(self, ms: int) -> int:
        """Move time forward (or backward with a negative value); returns the new now."""
        with self._lock:
            self._now_ms += int(ms)
            if ms > 0:
                self._advanced_ms += int(ms)
            return self._now_ms

    def sleep_ms(self, ms: int) -> None:
        """A fake sleep returns at once, having moved time forward by ``ms``."""
        self.advance(max(ms, 0))

    def set(self, now_ms: int) -> None:
        with self._lock:
            delta = int(now_ms) - self._now_ms
            self._now_ms = int(now_ms)
            if delta > 0:
                self._advanced_ms += delta


SYSTEM_CLOCK = SystemClock()
