"""A target's completions, settled together: one ``complete_batch`` per writer hop.

Why: with N POSTs in flight, answers arrive in bursts; completing each on its own was a
writer call (a savepoint, an UPDATE, a wake-up of this loop) per message. Here a
delivery that got a 2xx adds its (seq, token) and waits; one flush at a time runs per
target, taking everything added meanwhile, so a burst of k answers costs one writer call
and one statement. Its freed slots are then claimed again together (the dispatcher
claims all free slots per wake), so claims come in batches too. A stale token is
``ok=False`` (``LockLost`` to the delivery), exactly as ``complete`` would refuse it:
``complete_batch`` shares Complete's fencing and receipts (docs/push.md keeps its rules).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence

from mqlite import errors
from mqlite.types import BatchResult

Flush = Callable[[str, Sequence[tuple[int, str]]], Awaitable[list[BatchResult]]]


class Completions:
    def __init__(self, queue: str, flush: Flush) -> None:
        self._queue, self._flush = queue, flush
        self._pending: list[tuple[int, str, asyncio.Future[bool]]] = []
        self._task: asyncio.Task[None] | None = None

    async def complete(self, seq: int, token: str) -> None:
        """Complete one message with the next flush; ``LockLost`` when its lock was."""
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._pending.append((seq, token, future))
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run())
        if not await future:
            raise errors.LockLost("lock lost before the push settled")

    async def _run(self) -> None:
        await asyncio.sleep(0)  # deliveries answered in this same loop turn join the batch
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                results = await self._flush(self._queue, [(s, t) for s, t, _ in batch])
            except asyncio.CancelledError:
                for *_, future in batch:
                    future.cancel()
                raise
            except Exception as exc:  # the whole batch failed: nothing of it committed
                for *_, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (*_, future), result in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(result.ok)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for *_, future in self._pending:
            future.cancel()
        self._pending.clear()
