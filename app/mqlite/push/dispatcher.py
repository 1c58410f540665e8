"""The push loop: one thread running one asyncio event loop, one task per push target,
one task per message in flight (docs/push.md "Delivery").

Why its own thread and loop: deliveries are network waits (an asyncio loop holds
thousands cheaply), but claims and settlements block on SQLite; they go to the engine's
writer thread (as the server's calls do, with group commit), and this loop is not the
server's, so no push -- a receiver that never answers, answers a byte a second, sends
2 GB or resets -- can delay an API request. Each target has its own delivery slots (one
kept-alive connection each, transport.py) and its own deadline per POST, so one target
cannot hold another's connections or slots either.

A target's task claims up to ``max_in_flight`` minus what it has in flight (the claim
itself keeps group_fifo to one message per group and strict_fifo to one per queue, in
order: a locked head blocks its successors), waits on the engine's notifier for new work
(at most ``idle_s``, which also picks up delayed retries as they come due), and starts a
delivery task per message. A delivery renews the message's lock while its POST runs, so
a slow endpoint never gets the same message twice at once, then settles it by the
outcome (attempt.py); completions go to the writer in batches (completions.py), and the
slots they free are claimed again together. A crash between the POST and the settle
leaves the lock to expire: the message is delivered again with the same ``webhook-id``
(at-least-once).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from mqlite import defaults, errors
from mqlite.engine import Engine, retry
from mqlite.engine.push_registry import StoredPush
from mqlite.event_wait import wait_event
from mqlite.push import signing
from mqlite.push.attempt import COMPLETE, RETRY, Outcome, post
from mqlite.push.completions import Completions
from mqlite.push.transport import Slots, ssl_context
from mqlite.types import BatchResult, Message

if TYPE_CHECKING:
    import ssl

log = logging.getLogger("mqlite.push")
T = TypeVar("T")

# Without a queue retry policy a failing endpoint would get each message back at once:
# push spaces those retries itself, 1 s doubling to 60 s (a policy, when set, rules).
FALLBACK_INITIAL_MS = 1_000
FALLBACK_MAX_MS = 60_000
REJECT_REASON = "PushRejected"
TICK_S = 0.25  # how often the set of targets is read (a dict in memory: no SQL)


class PushDispatcher:
    def __init__(self, engine: Engine, *, idle_s: float = 1.0) -> None:
        self._engine = engine
        self._idle_s = idle_s
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._kicks: set[asyncio.Event] = set()
        self._ssl: ssl.SSLContext | None = None

    # -- lifecycle (any thread) -----------------------------------------------------------

    def start(self) -> None:
        ready = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(ready,), name="mqlite-push", daemon=True
        )
        self._thread.start()
        ready.wait(5)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop claiming, cancel POSTs in flight (their locks expire: redelivered)."""
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(stopping.set)
        if self._thread is not None:
            self._thread.join(timeout_s)

    def kick(self) -> None:
        """Wake every target now (tests, after advancing a FakeClock past a retry delay)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            for event in list(self._kicks):
                loop.call_soon_threadsafe(event.set)

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._stopping = asyncio.Event()
        ready.set()
        try:
            loop.run_until_complete(self._main())
        finally:
            loop.close()

    # -- the loop --------------------------------------------------------------------------

    async def _main(self) -> None:
        assert self._stopping is not None
        tasks: dict[str, asyncio.Task[None]] = {}
        try:
            while not self._stopping.is_set():
                targets = self._engine.push_targets()
                for queue in targets:
                    if queue not in tasks or tasks[queue].done():
                        tasks[queue] = asyncio.create_task(self._serve(queue))
                for queue in [q for q in tasks if q not in targets]:
                    tasks.pop(queue).cancel()  # its own task also notices and ends
                await wait_event(self._stopping, TICK_S)  # a new target starts within a tick
        finally:
            for task in tasks.values():
                task.cancel()
            await asyncio.gather(*tasks.values(), return_exceptions=True)

    async def _db(self, fn: Callable[..., T], *args: Any) -> T:
        """On the engine's writer thread, as the server's calls go (group commit: the
        settlements of many deliveries share one transaction); this loop never blocks."""
        result: T = await self._engine.writer.submit(fn, *args)
        return result

    async def _serve(self, queue: str) -> None:
        """One target: claim into free slots, deliver, wait for work."""
        engine, loop = self._engine, asyncio.get_running_loop()
        kick = asyncio.Event()
        self._kicks.add(kick)
        inflight: set[asyncio.Task[None]] = set()
        slots: Slots | None = None
        completions = Completions(queue, self._complete_batch)

        def wake() -> None:  # the notifier's thread: a send or settle committed
            loop.call_soon_threadsafe(kick.set)

        def done(task: asyncio.Task[None]) -> None:  # a slot is free again
            inflight.discard(task)
            kick.set()

        try:
            while True:
                target = engine.push_targets().get(queue)
                if target is None or engine.closed:
                    return
                if slots is None or slots.size != target.max_in_flight:
                    if slots is not None:
                        await asyncio.gather(*inflight, return_exceptions=True)
                        slots.close()
                    slots = self._slots(target.max_in_flight)
                kick.clear()
                waiter = engine.notifier.register(queue, wake)
                try:
                    free = target.max_in_flight - len(inflight)
                    got: list[Message] = []
                    if not target.paused and free > 0:
                        got = await self._claim(queue, free)
                    for msg in got:
                        task = asyncio.create_task(self._deliver(slots, completions, target, msg))
                        inflight.add(task)
                        task.add_done_callback(done)
                    if not got or len(inflight) >= target.max_in_flight:
                        await wait_event(kick, self._idle_s)
                finally:
                    waiter.cancel()
        finally:
            self._kicks.discard(kick)
            for task in inflight:
                task.cancel()
            await asyncio.gather(*inflight, return_exceptions=True)
            await completions.close()
            if slots is not None:
                slots.close()

    def _slots(self, size: int) -> Slots:
        if self._ssl is None:  # one TLS context (the CA bundle read once) for every target
            self._ssl = ssl_context()
        return Slots(self._engine.pushes.egress, size, self._ssl)

    async def _claim(self, queue: str, n: int) -> list[Message]:
        """Claim up to ``n``; a failure waits a tick (never a tight loop: a closed
        notifier fires every waiter at once), a closed engine ends the target's task."""
        try:
            return await self._db(self._engine.try_receive, queue, n)
        except errors.Closed:
            raise asyncio.CancelledError() from None
        except errors.QueueNotFound:
            pass  # the queue is gone; the target waits for one of that name
        except errors.MQLiteError as exc:
            log.warning("push claim failed", extra={"queue": queue, "error": exc.message})
        await asyncio.sleep(self._idle_s)
        return []

    async def _complete_batch(
        self, queue: str, items: Sequence[tuple[int, str]]
    ) -> list[BatchResult]:
        return await self._db(self._engine.complete_batch, queue, items)

    async def _deliver(
        self, slots: Slots, completions: Completions, target: StoredPush, msg: Message
    ) -> None:
        engine = self._engine
        now = engine.now_ms()
        headers = signing.headers(target.key(), msg, now // 1000)
        renewing = asyncio.create_task(self._renew(msg))
        slot = slots.take()
        try:
            outcome = await post(slot, target.url, headers, msg.body, target.timeout_ms, now)
        finally:
            slots.give(slot)
            renewing.cancel()
        next_at = 0
        try:
            next_at = await self._settle(completions, msg, outcome)
        except errors.LockLost:
            log.info("push: lock lost before settling", extra={"queue": msg.queue})
        except errors.MQLiteError as exc:
            log.warning("push settle failed", extra={"queue": msg.queue, "error": exc.message})
        engine.record_push(
            msg.queue,
            outcome=outcome.kind,
            status=outcome.status,
            error=outcome.error,
            seconds=outcome.seconds,
            next_ms=next_at,
        )

    async def _renew(self, msg: Message) -> None:
        """Keep the lock while the POST runs: renew at a third of the lock duration."""
        info = self._engine.catalog.find(msg.queue)
        every = (info.config.lock_duration_ms if info else defaults.LOCK_DURATION_MS) / 3000
        while True:
            await asyncio.sleep(every)
            with contextlib.suppress(errors.MQLiteError):
                await self._db(self._engine.renew, msg.queue, msg.seq_number, msg.lock_token)

    async def _settle(self, completions: Completions, msg: Message, outcome: Outcome) -> int:
        """Settle by the outcome; returns when the message is due again (0: settled). A
        completion joins the target's next batch (completions.py)."""
        engine, q, seq, token = self._engine, msg.queue, msg.seq_number, msg.lock_token
        if outcome.kind == COMPLETE:
            await completions.complete(seq, token)
            return 0
        if outcome.kind == RETRY:
            delay, due = self._delay(q, msg.delivery_count, outcome.retry_after_ms)
            await self._db(lambda: engine.abandon(q, seq, token, delay, outcome.error))
            return engine.now_ms() + due
        why = f"{outcome.error} (HTTP status {outcome.status})"
        await self._db(lambda: engine.reject(q, seq, token, REJECT_REASON, why))
        return 0

    def _delay(self, queue: str, delivery_count: int, retry_after_ms: int) -> tuple[int, int]:
        """(Abandon's delay_ms, the expected wait): 0 = the queue's policy decides."""
        info = self._engine.catalog.find(queue)
        if info is not None and retry.has_policy(info.config):
            if retry_after_ms > 0:
                capped = min(retry_after_ms, info.config.retry_max_delay_ms)
                return max(capped, 1), capped
            return 0, retry.ceiling_ms(info.config, delivery_count)
        fallback = min(FALLBACK_INITIAL_MS << min(max(delivery_count - 1, 0), 16), FALLBACK_MAX_MS)
        cap = info.config.retry_max_delay_ms if info is not None else FALLBACK_MAX_MS
        delay = min(retry_after_ms, cap) if retry_after_ms > 0 else fallback
        return max(delay, 1), delay
