"""``mqlite serve`` whose engine clock runs ahead of the wall clock so that it reaches a
minute boundary ``SHIFTED_SERVE_LEAD_MS`` after the process starts.

A cron test of serve's own maintenance loop (APScheduler firing a ``* * * * *`` slot)
waited for the wall clock's next minute: 30 s on average, up to 60 s, in each of two
pytest processes (44 s in the loaded CI run, issue 25). With the engine's time injected
(mqlite.clock: the engine reads business time from its clock and nowhere else) the slot
comes within seconds. The broker is otherwise the real one: gunicorn master and uvicorn
worker (the clock is set before the fork, so the worker has it), the real scheduler and
its 1 s cadence, a real database; only the time the engine reads is ahead.

Used by the e2e tests: ``python tests/e2e/shifted_serve.py --addr ...``.
"""

from __future__ import annotations

import os
import sys

import mqlite.engine.core
from mqlite.cli.main import main
from mqlite.clock import SystemClock

MINUTE_MS = 60_000


class Ahead(SystemClock):
    """The wall clock plus a fixed offset (monotonic time and sleeps are the real ones)."""

    def __init__(self, offset_ms: int) -> None:
        self.offset_ms = offset_ms

    def now_ms(self) -> int:
        return super().now_ms() + self.offset_ms


def offset_to_boundary(now_ms: int, lead_ms: int) -> int:
    """The offset in [0, 60 s) that puts ``now_ms`` ``lead_ms`` before a minute boundary."""
    return -(now_ms + lead_ms) % MINUTE_MS


if __name__ == "__main__":
    lead_ms = int(os.environ["SHIFTED_SERVE_LEAD_MS"])
    offset = offset_to_boundary(SystemClock().now_ms(), lead_ms)
    mqlite.engine.core.SYSTEM_CLOCK = Ahead(offset)  # the engine's default clock
    sys.exit(main(["serve", *sys.argv[1:]]))
