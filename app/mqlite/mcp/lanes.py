"""Tool calls run on worker threads in two bounded lanes, so parked calls cannot starve
short ones.

A tool call is a blocking broker request on a thread (``Forwarder.call``). On one shared
pool, 45 ``receive`` calls parked in their long poll (up to 20 s each) took every thread
and made ``list_queues`` wait 13.6 s. Here a ``receive`` that may wait (``wait_time_ms``
not 0) runs in the long-poll lane, every other call in the short lane, each with its own
thread bound: a full long-poll lane queues further long polls, never a short call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio

LONG_POLL_THREADS = 32  # parked receives at once; more wait for a thread of this lane
SHORT_THREADS = 16  # every other tool call: quick broker requests
LONG_POLLING_TOOLS = frozenset({"receive"})


def may_park(tool: str, arguments: Mapping[str, Any]) -> bool:
    """Whether a call may hold its thread in a long poll (a bad ``wait_time_ms`` counts:
    the broker refuses it, but the lane is decided before it is checked; null is absent)."""
    return tool in LONG_POLLING_TOOLS and arguments.get("wait_time_ms") not in (None, 0)


class Lanes:
    """The two thread limiters of one server (created in its event loop, on first use)."""

    def __init__(self, long_poll: int = LONG_POLL_THREADS, short: int = SHORT_THREADS) -> None:
        self._sizes = (long_poll, short)
        self._limiters: tuple[anyio.CapacityLimiter, anyio.CapacityLimiter] | None = None

    def limiter(self, tool: str, arguments: Mapping[str, Any]) -> anyio.CapacityLimiter:
        if self._limiters is None:
            long_poll, short = self._sizes
            self._limiters = (anyio.CapacityLimiter(long_poll), anyio.CapacityLimiter(short))
        return self._limiters[0] if may_park(tool, arguments) else self._limiters[1]
