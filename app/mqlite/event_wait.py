"""Wait for an asyncio event with a timeout, without losing a cancellation.

Why not ``asyncio.wait_for(event.wait(), t)``: on Python 3.11 (our floor) ``wait_for``
swallows a cancellation that arrives in the same loop turn as the event is set -- it sees
the inner wait done and returns its result instead of raising (CPython gh-86296, fixed in
3.12 by rebuilding ``wait_for`` on ``asyncio.timeout``). The push dispatcher met it on
every close that woke its targets while it cancelled them: the target's task went on
looping and ``close()`` waited out the whole 5 s join. ``asyncio.timeout`` counts
cancellations (``Task.uncancel``) and re-raises ours.
"""

from __future__ import annotations

import asyncio


async def wait_event(event: asyncio.Event, timeout_s: float) -> bool:
    """True once ``event`` is set, False after ``timeout_s``; a cancellation always raises."""
    try:
        async with asyncio.timeout(timeout_s):
            await event.wait()
    except TimeoutError:
        return False
    return True
