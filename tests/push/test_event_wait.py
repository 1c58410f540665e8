"""``event_wait.wait_event``: a wait with a timeout that never loses a cancellation.

The push dispatcher's close cancelled its targets' tasks in the same loop turn as the
engine's release woke them; ``asyncio.wait_for`` on Python 3.11 returned the wake-up and
dropped the cancel, and ``close()`` waited out its whole 5 s join (seen as 5.5 s
teardowns across tests/push). Deterministic: the set and the cancel land in one turn.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable

import pytest

from mqlite.event_wait import wait_event


def _cancel_as_the_event_is_set(wait: Callable[[asyncio.Event], Awaitable[object]]) -> str:
    async def main() -> str:
        event = asyncio.Event()
        task = asyncio.create_task(wait(event))
        await asyncio.sleep(0)  # the task now waits on the event
        event.set()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            return "cancelled"
        return "returned"

    return asyncio.run(main())


def test_a_cancel_in_the_turn_the_event_is_set_raises() -> None:
    assert _cancel_as_the_event_is_set(lambda e: wait_event(e, 10)) == "cancelled"


def test_the_race_is_real_for_wait_for_on_this_python() -> None:
    """Why the helper exists: where wait_for still drops the cancel, this shows it (the
    helper's test above would then be the only thing standing between a close and 5 s)."""
    got = _cancel_as_the_event_is_set(lambda e: asyncio.wait_for(e.wait(), 10))
    assert got == ("returned" if sys.version_info < (3, 12) else "cancelled")


@pytest.mark.parametrize("is_set", [False, True])
def test_it_answers_set_or_timed_out(is_set: bool) -> None:
    async def main() -> bool:
        event = asyncio.Event()
        if is_set:
            event.set()
        return await wait_event(event, 0.01)

    assert asyncio.run(main()) is is_set
