"""Claiming for the ``Receiver``: one poll thread that never claims more than it can run.

A claimed message's lease is ticking, so a message waiting in a local buffer is a lease
burnt for nothing and a message another consumer could have taken: each receive asks for at
most the free handler slots, and a slot comes back only once its message is settled. A
transient receive error is counted, reported and retried with the retry backoff (a 429's
Retry-After when longer); a credential the broker refuses stops the receiver. A part of
the receiver (``receiver_core.py``), sharing its state behind its one condition variable.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING

from mqlite.sdk.consumer import (
    EMPTY_POLL_FLOOR_MS,
    FATAL_ERRORS,
    RETRY_FLOOR_MS,
    Lease,
    log,
)
from mqlite.sdk.receiver_core import ReceiverCore, ReceiverPart
from mqlite.sdk.retry import retry_after_ms
from mqlite.types import Message, ReceiveMode

if TYPE_CHECKING:
    from mqlite.sdk.stopping import Stopping


class Claiming(ReceiverPart):
    """The poll thread's part of the ``Receiver``."""

    # The flags it shares with the other threads are read and written on the core itself
    # (``self._receiver._stopping``), not through ``Shared``: the wait below re-reads them
    # at every settlement, so they cost a plain attribute lookup, never a descriptor call.

    def __init__(self, receiver: ReceiverCore, stopper: Stopping) -> None:
        super().__init__(receiver)
        self._concurrency = receiver._concurrency
        self._max_messages = receiver._max_messages
        self._wait_ms = receiver._wait_ms
        self._retry = receiver._retry
        self._work = receiver._work
        self._fail = stopper._fail
        self._abandon_all = stopper._abandon_all

    def _poll_loop(self) -> None:
        """Claim at most the free slots per receive; dispatch; retry transient errors."""
        attempt_id: str | None = None
        failures = 0
        try:
            while True:
                with self._cond:
                    while not self._receiver._stopping and len(self._inflight) >= self._concurrency:
                        self._cond.wait()
                    if self._receiver._stopping:
                        return
                    n = min(self._concurrency - len(self._inflight), self._max_messages)
                    self._receiver._in_receive = True
                # One attempt id per logical claim, reused by its retries: if a receive
                # claimed but its answer was lost, the retry gets the same messages back
                # instead of leaving them locked until their leases lapse.
                if attempt_id is None:
                    attempt_id = secrets.token_hex(16)
                started = self._clock.monotonic_ms()
                try:
                    got = list(
                        self._client.receive(
                            self._queue, n, self._wait_ms, ReceiveMode.PEEK_LOCK, attempt_id
                        )
                    )
                except Exception as exc:
                    if self._leave_receive():
                        # A poll detached by stop() ended badly (often: the client was
                        # closed under it). Nothing was claimed; nothing to report.
                        log.debug("receive on %r after stop ended: %s", self._queue, exc)
                        return
                    if isinstance(exc, FATAL_ERRORS):
                        self._fail(exc)
                        return
                    failures += 1
                    self._count("receive_errors")
                    log.warning(
                        "receive from %r failed (attempt %d), retrying: %s",
                        self._queue,
                        failures,
                        exc,
                    )
                    self._report(exc, None)
                    pause = max(float(self._retry.delay_ms(failures)), RETRY_FLOOR_MS)
                    self._pause(max(pause, retry_after_ms(exc)))  # a 429: the broker's wait
                    continue
                attempt_id = None
                failures = 0
                leftovers = self._dispatch(got, n)
                if leftovers:
                    self._abandon_all(
                        leftovers, "abandoned_on_stop" if self._receiver._stopping else "abandoned"
                    )
                if not got:
                    elapsed = self._clock.monotonic_ms() - started
                    if elapsed < EMPTY_POLL_FLOOR_MS:
                        self._pause(EMPTY_POLL_FLOOR_MS - elapsed)
        finally:
            with self._cond:
                self._receiver._in_receive = False
                self._receiver._poll_alive = False
                self._cond.notify_all()

    def _leave_receive(self) -> bool:
        """Mark the receive as over; True if the receiver is stopping meanwhile."""
        with self._cond:
            self._receiver._in_receive = False
            self._cond.notify_all()
            return self._receiver._stopping

    def _dispatch(self, got: list[Message], asked: int) -> list[Message]:
        """Hand claimed messages to the workers; return those to abandon instead.

        Once stopping (a claim that raced stop()), or beyond what was asked for (a client
        that overshot), a message is abandoned at once rather than run.
        """
        leftovers: list[Message] = []
        counts, inflight, work = self._counts, self._inflight, self._work
        with self._cond:
            self._receiver._in_receive = False
            stopping = self._receiver._stopping  # fixed while the condition is held
            for i, msg in enumerate(got):
                if not msg.lock_token:
                    continue  # nothing to settle or renew (not a peek-lock claim)
                counts["received"] += 1
                if stopping or i >= asked:
                    leftovers.append(msg)
                    continue
                lease = Lease(msg)
                inflight[lease.key] = lease
                work.put(lease)
            self._receiver._renew_dirty = True
            self._cond.notify_all()
        return leftovers

    def _pause(self, ms: float) -> None:
        """Wait ``ms`` unless stop() is called first (never a bare sleep: stop is prompt)."""
        with self._cond:
            end = self._clock.monotonic_ms() + ms
            while not self._receiver._stopping:
                remaining = end - self._clock.monotonic_ms()
                if remaining <= 0:
                    return
                self._cond.wait(remaining / 1000.0)
