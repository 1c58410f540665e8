"""What Observe and /metrics say about cron schedules (docs/cron.md, "Observability").

Firings are counted in process (since the engine started, like every Observe counter)
once they commit. The lag of a schedule is how far behind its timetable it is: while a
slot is due and not yet sent, now minus that slot (it grows if firing stalls); otherwise
the lag of its latest firing (fire time minus slot time) for ``LAG_WINDOW_MS`` after it,
then 0, so one late firing (a catch-up after downtime) shows for a while and clears.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from collections.abc import Callable

from mqlite import defaults, errors
from mqlite.engine import observation as o

LAG_WINDOW_MS = 600_000

# Due, unsent slots: a seek of idx_schedules_due up to now (normally none or a few: the
# pass runs every second). Only unpaused schedules are ever due.
OVERDUE_SQL = """
SELECT name, next_fire_at FROM schedules
WHERE paused = 0 AND next_fire_at <= :now
ORDER BY next_fire_at, name LIMIT :limit
"""


class ScheduleMeasures:
    """Per-schedule firings and latest lag; written after commit, read by Observe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fired: Counter[str] = Counter()
        self._last: dict[str, tuple[int, int]] = {}  # name -> (fired at ms, lag ms)

    def record(self, name: str, fired_at_ms: int, lag_ms: int) -> None:
        with self._lock:
            self._fired[name] += 1
            self._last[name] = (fired_at_ms, lag_ms)

    def forget(self, name: str) -> None:
        """A deleted schedule's series go away."""
        with self._lock:
            self._fired.pop(name, None)
            self._last.pop(name, None)

    def observe(self, reader: Callable[[], sqlite3.Connection], now_ms: int) -> o.Schedules:
        """The block, reading due slots through ``reader`` (unavailable when it fails: a
        closed engine, a storage error)."""
        state, due = "available", []
        try:
            params = {"now": now_ms, "limit": defaults.MAX_SCHEDULES}
            due = reader().execute(OVERDUE_SQL, params).fetchall()
        except (sqlite3.Error, errors.MQLiteError):
            state = "unavailable"
        lag: dict[str, int] = {name: now_ms - slot for name, slot in due}
        with self._lock:
            fired = dict(self._fired)
            for name, (at, late) in self._last.items():
                if now_ms - at <= LAG_WINDOW_MS:
                    lag[name] = max(lag.get(name, 0), late)
        names = sorted(set(fired) | set(lag))
        return o.Schedules(
            state,
            len(due),
            tuple(o.ScheduleMeasure(n, fired.get(n, 0), lag.get(n, 0) / 1000) for n in names),
        )
