"""One long poll per consumed queue, feeding the connection's inbox.

kombu's virtual transport polls its queues in turn and sleeps between empty rounds;
mqlite's Receive parks up to 20 s and answers the moment a message commits, so each
consumer gets a daemon thread that long-polls its queue and hands what it claims to the
connection's ``drain_events`` through one inbox. A Celery worker consumes its task queues
and its remote-control queue this way without either waiting behind the other.

Claims never outrun the consumer: a poll asks for at most the channel's free prefetch
slots (Celery's ``worker_prefetch_multiplier`` × concurrency), and a slot frees only when
its message is settled, so no lease burns in a local buffer.
"""

from __future__ import annotations

import logging
import queue as stdqueue
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from mqlite import errors
from mqlite.sdk.consumer import RETRY_FLOOR_MS
from mqlite.sdk.protocol import Client
from mqlite.sdk.retry import retry_after_ms
from mqlite.types import Message, ReceiveMode

log = logging.getLogger("mqlite.kombu")

UNLIMITED_CAP = 64  # in-flight bound of a channel without a prefetch count (kombu's 0)
MAX_BATCH = 32  # messages asked for by one Receive
RETRY_CAP_MS = 5_000
GATHER_MS = 5.0  # how long a busy poll waits for more free slots (see Slots.take)


class Slots:
    """A channel's prefetch window: claimed-but-unsettled messages against the limit."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._limit = 0
        self._used = 0
        self._closed = False

    def set_limit(self, prefetch_count: int) -> None:
        with self._cond:
            self._limit = prefetch_count
            self._cond.notify_all()

    def take(self, most: int, stopped: Callable[[], bool]) -> int:
        """Block until at least one slot is free; take up to ``most``. 0 once closed or
        ``stopped()``.

        A busy worker frees slots one settlement at a time; rather than one Receive per
        freed slot, wait up to ``GATHER_MS`` for half the window to be free (an idle
        worker's window is all free, so nothing waits then)."""
        with self._cond:
            gather_until: float | None = None
            while True:
                if self._closed or stopped():
                    return 0
                limit = self._limit or UNLIMITED_CAP
                free = limit - self._used
                if free > 0:
                    now = time.monotonic()
                    if gather_until is None:
                        gather_until = now + GATHER_MS / 1000.0
                    if free * 2 >= limit or free >= most or now >= gather_until:
                        n = min(free, most)
                        self._used += n
                        return n
                    self._cond.wait(gather_until - now)
                    continue
                self._cond.wait()

    def give(self, n: int = 1) -> None:
        if n <= 0:
            return
        with self._cond:
            self._used = max(self._used - n, 0)
            self._cond.notify_all()

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


@dataclass(frozen=True, slots=True)
class Delivery:
    """A claimed message on its way to ``drain_events``."""

    poller: Poller
    message: Message


class Poller:
    """The long-poll loop of one consumer (a queue on a channel)."""

    def __init__(
        self,
        client: Client,
        queue: str,
        *,
        no_ack: bool,
        slots: Slots,
        inbox: stdqueue.Queue[Delivery | BaseException],
        wait_ms: int,
        on_claimed: Callable[[Message], None],
        on_exit: Callable[[], None],
    ) -> None:
        self.client = client
        self.queue = queue
        self.no_ack = no_ack
        self.slots = slots
        self._inbox = inbox
        self._wait_ms = wait_ms
        self._on_claimed = on_claimed
        self._on_exit = on_exit
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"mqlite-poll-{queue}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()
        self.slots.wake()

    @property
    def mode(self) -> str:
        # no_ack is AMQP's "delivered = settled": receive-and-delete, one request.
        return ReceiveMode.RECEIVE_AND_DELETE if self.no_ack else ReceiveMode.PEEK_LOCK

    def _run(self) -> None:
        failures = 0
        try:
            while not self.stopped:
                n = self.slots.take(MAX_BATCH, self._stop.is_set)
                if n == 0:
                    return
                try:
                    got = self.client.receive(self.queue, n, self._wait_ms, self.mode)
                except Exception as exc:
                    self.slots.give(n)
                    if self.stopped or isinstance(exc, errors.Closed):
                        return  # a poll parked when its consumer or queue went away
                    failures += 1
                    self._failed(exc, failures)
                    continue
                failures = 0
                self.slots.give(n - len(got))
                if self.stopped:  # claimed by a poll parked when its consumer went away
                    self._give_back(got)
                    return
                for m in got:
                    if not self.no_ack:
                        self._on_claimed(m)
                    self._inbox.put(Delivery(self, m))
        finally:
            self._on_exit()

    def _give_back(self, got: list[Message]) -> None:
        self.slots.give(len(got))
        if self.no_ack:
            return  # received and deleted: AMQP drops what an auto-delete queue held
        for m in got:
            try:
                self.client.abandon(self.queue, m.seq_number, m.lock_token)
            except Exception as exc:  # the lock expires instead
                log.warning("message %d in %r not given back: %s", m.seq_number, self.queue, exc)

    def _failed(self, exc: Exception, failures: int) -> None:
        if isinstance(exc, errors.Unauthenticated | errors.PermissionDenied):
            self._inbox.put(exc)  # drain_events raises it: Celery reports it and reconnects
        else:
            log.warning("receive from %r failed (%s); retrying", self.queue, exc)
        # A rate-limited key (429) waits at least what the broker asked for.
        self._pause(failures, retry_after_ms(exc))

    def _pause(self, failures: int, floor_ms: float = 0) -> None:
        ceiling = min(RETRY_CAP_MS, RETRY_FLOOR_MS * 2 ** min(failures, 10))
        wait_ms = max(random.uniform(0, ceiling), RETRY_FLOOR_MS, floor_ms)
        self._stop.wait(wait_ms / 1000.0)
