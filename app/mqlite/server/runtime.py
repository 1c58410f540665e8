"""The bridge between the event loop and the engine's writer.

Every engine call is submitted to the engine's writer thread (``engine/writer.py``, group
commit included), so the event loop never blocks on SQLite; the server opens no
transaction of its own. A long poll parks on the engine's notifier as an asyncio future:
no thread is held while it waits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from mqlite.server.broker import Broker, Parked
from mqlite.types import Message

P = ParamSpec("P")
T = TypeVar("T")


class Runtime:
    """The engine plus the draining flag of a graceful shutdown."""

    def __init__(self, engine: Broker) -> None:
        self.engine = engine
        self._submit = engine.submit
        self.draining = False

    async def call(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """Run an engine method on the writer thread and await its (committed) result;
        mypy checks the arguments against ``fn`` and the result's use against its type."""
        return await self._submit(fn, *args, **kwargs)

    def begin_drain(self) -> None:
        """Stop handing out claims and wake every parked long poll (they return empty)."""
        self.draining = True
        self.engine.release_polls()

    async def receive(
        self,
        queue: str,
        max_messages: int,
        wait_ms: int,
        *,
        delete: bool,
        attempt_id: str | None,
        disconnected: asyncio.Event,
    ) -> list[Message]:
        """Claim now; else park on the queue's notifier until woken, the deadline, a
        disconnect or a drain. A client that went away claims nothing."""
        engine = self.engine
        claim = engine.try_receive
        if self.draining:
            return []
        got = await self.call(claim, queue, max_messages, delete=delete, attempt_id=attempt_id)
        if got or wait_ms <= 0:
            return got
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_ms / 1000.0
        waiter: Parked | None = None
        try:
            while True:
                woken = loop.create_future()

                def wake(fut: asyncio.Future[None] = woken) -> None:
                    loop.call_soon_threadsafe(_resolve, fut)

                waiter = engine.park(queue, wake)
                if self.draining or disconnected.is_set():
                    return []
                # Claim again after registering: a commit in between is no lost wake-up.
                got = await self.call(
                    claim, queue, max_messages, delete=delete, attempt_id=attempt_id
                )
                if got:
                    return got
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return []
                gone = asyncio.ensure_future(disconnected.wait())
                try:
                    await asyncio.wait(
                        {woken, gone}, timeout=remaining, return_when="FIRST_COMPLETED"
                    )
                finally:
                    gone.cancel()
                if self.draining or disconnected.is_set():
                    return []
                waiter.cancel()  # the wake (if any) is consumed by the claim that follows
                waiter = None
        finally:
            # A wake this poll will not use goes to the next parked poll (notify.py).
            if waiter is not None and waiter.cancel() and not self.draining:
                engine.wake_one(queue)


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
