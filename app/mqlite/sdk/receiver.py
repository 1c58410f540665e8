"""The managed consumer: claim, run a handler per message, settle, keep the leases alive.

``Receiver(client, queue, handler)`` is the hands-off consume loop of the docs' Examples §3,
for the embedded client and the HTTP client alike: it only calls the methods both share
(``receive``, ``complete``, ``abandon``, ``reject``, ``renew_batch``), positionally, and it
settles through the client, never through a message's bound methods or the engine.

Why it is built the way it is:

- **Never more claimed than it can run.** A claimed message's lease is ticking; a message
  waiting in a local buffer is a lease burnt for nothing and a message another consumer could
  have taken. So one poll thread claims at most as many messages as there are free handler
  slots, and a slot is released only after the message is settled: ``concurrency`` bounds
  claimed-but-unsettled messages exactly, not just running handlers.
- **Leases renewed in batches, on their own thread.** A handler may run longer than the
  lock. The renewer sends ONE ``renew_batch`` per ≤512 in-flight messages (the broker's
  single-statement limit, api-reference RenewBatch) every third of the tightest remaining
  lease (original-behaviour §9), using the deadline the broker committed as the truth.
- **Failure is local.** A lost lease, a failed settlement or a transient receive error is
  counted, logged and reported to ``on_error``; the loop goes on, because the broker will
  redeliver (at-least-once). Only a credential the broker refuses (``Unauthenticated`` /
  ``PermissionDenied``) or a closed client stops the receiver: retrying cannot fix those.
- **Stopping loses nothing.** ``stop()`` stops claiming, lets handlers finish (or, past the
  timeout, abandons their messages with no delay so they are redelivered at once), settles,
  stops the renewer and returns. Handlers must be idempotent anyway (at-least-once).

Thread model: one poll thread, ``concurrency`` daemon worker threads, one renewer thread
(``auto_renew``) and one short-lived drainer at stop. All shared state sits behind one
condition variable; nothing is global.
"""

from __future__ import annotations

import contextlib
import logging
import math
import queue as queue_mod
import random
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from types import TracebackType
from typing import Protocol, cast

from mqlite import defaults, errors
from mqlite.clock import SYSTEM_CLOCK, Clock
from mqlite.types import BatchResult, Message, ReceiveMode

log = logging.getLogger("mqlite.receiver")

# Errors no retry can fix: the receiver stops and surfaces them from run()/stop().
FATAL_ERRORS: tuple[type[errors.MQLiteError], ...] = (
    errors.Unauthenticated,
    errors.PermissionDenied,
    errors.Closed,
)

RENEW_FLOOR_MS = 50.0
"""Renewal interval floor (§9), applied only while it stays below half the remaining lease."""

RENEW_UNKNOWN_DEADLINE_MS = 1000.0
"""Renewal cadence when no in-flight message has a known deadline (§9: 1 s retry)."""

EMPTY_POLL_FLOOR_MS = 50.0
"""An empty receive is followed by at least this pause (never a busy loop on wait_ms=0)."""

RETRY_FLOOR_MS = 50.0
"""Minimum pause before retrying a failed receive or renewal (full jitter can draw 0)."""


class DeadLetter(Exception):
    """Raise from a handler to dead-letter the message (``reject``) instead of retrying it.

    Use it for poison messages that no redelivery will fix (bad schema, unknown type): an
    ordinary exception abandons the message, which redelivers it until the queue's
    ``max_delivery_count`` dead-letters it anyway, burning those deliveries first.
    """

    def __init__(self, reason: str, description: str = "") -> None:
        if not isinstance(reason, str) or not isinstance(description, str):
            raise TypeError("DeadLetter reason and description must be strings")
        super().__init__(f"{reason}: {description}" if description else reason)
        self.reason = reason
        self.description = description


class Backoff:
    """Exponential backoff with FULL jitter, capped (the AWS "full jitter" policy).

    ``delay_ms(n)`` for the n-th delivery (``Message.delivery_count``, 1-based) draws
    uniformly from ``[0, min(cap_ms, base_ms * multiplier ** (n - 1))]`` with
    ``rng.randint``. Full jitter rather than a fixed exponential spreads the retries of many
    messages that failed together (a downstream outage) instead of re-synchronising them
    into waves; the cap bounds the worst wait. Pass a seeded ``random.Random`` for a
    deterministic sequence (tests); each Backoff otherwise owns a private generator.
    """

    __slots__ = ("_lock", "_rng", "base_ms", "cap_ms", "multiplier")

    def __init__(
        self,
        base_ms: int,
        cap_ms: int,
        multiplier: float = 2,
        *,
        rng: random.Random | None = None,
    ) -> None:
        if isinstance(base_ms, bool) or not isinstance(base_ms, int) or base_ms < 0:
            raise ValueError(f"base_ms must be a non-negative integer, got {base_ms!r}")
        if isinstance(cap_ms, bool) or not isinstance(cap_ms, int) or cap_ms < base_ms:
            raise ValueError(f"cap_ms must be an integer >= base_ms, got {cap_ms!r}")
        if isinstance(multiplier, bool) or not isinstance(multiplier, int | float):
            raise ValueError(f"multiplier must be a number >= 1, got {multiplier!r}")
        if not math.isfinite(multiplier) or multiplier < 1:
            raise ValueError(f"multiplier must be a number >= 1, got {multiplier!r}")
        self.base_ms = base_ms
        self.cap_ms = cap_ms
        self.multiplier = float(multiplier)
        self._rng = rng if rng is not None else random.Random()
        self._lock = threading.Lock()  # handlers fail on several worker threads at once

    def ceiling_ms(self, attempt: int) -> int:
        """The upper bound of the draw for the ``attempt``-th delivery (1-based)."""
        k = max(int(attempt), 1) - 1
        try:
            raw = self.base_ms * self.multiplier**k
        except OverflowError:
            return self.cap_ms
        return int(min(float(self.cap_ms), raw))

    def delay_ms(self, attempt: int) -> int:
        """A fresh jittered delay in ``[0, ceiling_ms(attempt)]`` milliseconds."""
        ceiling = self.ceiling_ms(attempt)
        with self._lock:
            return self._rng.randint(0, ceiling)

    def __repr__(self) -> str:
        return (
            f"Backoff(base_ms={self.base_ms}, cap_ms={self.cap_ms}, multiplier={self.multiplier})"
        )


class ReceiverClient(Protocol):
    """The client surface the Receiver needs: shared by the embedded and the HTTP client.

    Parameters are positional-only so any client with these positions fits, whatever it
    names them.
    """

    def receive(
        self,
        queue: str,
        max_messages: int,
        wait_ms: int,
        mode: str,
        attempt_id: str | None,
        /,
    ) -> Sequence[Message]: ...

    def complete(self, queue: str, seq_number: int, lock_token: str, /) -> None: ...

    def abandon(self, queue: str, seq_number: int, lock_token: str, delay_ms: int, /) -> None: ...

    def reject(
        self, queue: str, seq_number: int, lock_token: str, reason: str, description: str, /
    ) -> None: ...

    def renew_batch(
        self, queue: str, items: Sequence[tuple[int, str]], /
    ) -> Sequence[BatchResult]: ...


Handler = Callable[[Message], object]
ErrorCallback = Callable[[BaseException, Message | None], None]


@dataclass(frozen=True, slots=True)
class ReceiverStats:
    """A snapshot of what a Receiver has done so far (``Receiver.stats()``).

    ``lock_lost`` counts settlements the broker refused with ``LockLost``; ``leases_lost``
    counts leases the renewer found gone (ok=False, or a deadline already past).
    """

    received: int = 0
    completed: int = 0
    abandoned: int = 0
    dead_lettered: int = 0
    handler_errors: int = 0
    lock_lost: int = 0
    settle_errors: int = 0
    receive_errors: int = 0
    renew_calls: int = 0
    renewed: int = 0
    renew_errors: int = 0
    leases_lost: int = 0
    abandoned_on_stop: int = 0
    in_flight: int = 0


def renewal_delay_ms(remaining_ms: float) -> float:
    """How long to wait before the next renewal pass, given the tightest remaining lease.

    original-behaviour §9: a third of the remaining lease (two more chances before it
    lapses), floored at 50 ms so short leases do not spin, but the floor never pushes the
    pass to half the remaining or later; under 1 ms left, renew at once.
    """
    if remaining_ms < 1:
        return 0.0
    delay = remaining_ms / 3.0
    if delay < RENEW_FLOOR_MS < remaining_ms / 2.0:
        delay = RENEW_FLOOR_MS
    return delay


class _Lease:
    """One claimed message from receive to settlement: its deadline and its fate."""

    __slots__ = ("locked_until_ms", "lost", "message", "released", "settling")

    def __init__(self, message: Message) -> None:
        self.message = message
        self.locked_until_ms = message.locked_until_ms  # 0 = unknown
        self.lost = False  # renewal refused or lapsed: stop renewing, settle will tell
        self.settling = False  # the worker is settling: stop() must not abandon it
        self.released = False  # stop() abandoned it: the handler's outcome is dropped

    @property
    def key(self) -> tuple[int, str]:
        return (self.message.seq_number, self.message.lock_token)


def _client_clock(client: object) -> Clock:
    """The clock the client stamps lease deadlines with, if it exposes one (the embedded
    engine does); otherwise the system clock, which a remote broker's deadlines follow."""
    own = getattr(client, "clock", None)
    if callable(getattr(own, "now_ms", None)) and callable(getattr(own, "monotonic_ms", None)):
        return cast(Clock, own)
    return SYSTEM_CLOCK


class Receiver:
    """A managed consume loop over ``client`` for ``queue``.

    ``handler(message)`` runs on a pool of ``concurrency`` threads:

    - returns → ``complete``;
    - raises :class:`DeadLetter` → ``reject`` (dead-letter) with its reason/description;
    - raises anything else → ``abandon``, with ``backoff.delay_ms(message.delivery_count)``
      as the redelivery delay when a :class:`Backoff` is given (else redelivered at once);
      the queue's ``max_delivery_count`` dead-letters it eventually.

    Options: ``max_messages`` caps one receive (default ``concurrency``, at most 256; a
    receive never asks for more than the free slots); ``wait_ms`` is the long poll
    (0..20000); ``auto_renew`` keeps leases alive with ``renew_batch`` while handlers run;
    ``on_error(exc, message_or_None)`` hears about handler failures, lost leases, failed
    settlements and receive/renew errors (it runs on the receiver's threads: keep it quick
    and thread-safe); ``retry_backoff`` paces receive retries (default 100 ms .. 5 s, full
    jitter); ``clock`` is what lease deadlines are compared against: by default the
    client's own ``clock`` when it has one (the embedded engine stamps deadlines with it,
    FakeClock included), else the system clock (a remote broker's epoch-ms deadlines).

    Lifecycle: ``start()`` returns at once, ``run()`` blocks until stopped, ``stop()``
    drains; a ``with Receiver(...) as r:`` block starts it and stops it on exit. A receiver
    runs once. A long poll still parked when stop() is called is not waited for: whatever it
    claims later is abandoned at once, with no delay.
    """

    def __init__(
        self,
        client: ReceiverClient,
        queue: str,
        handler: Handler,
        *,
        concurrency: int = 1,
        auto_renew: bool = True,
        max_messages: int | None = None,
        wait_ms: int = defaults.MAX_WAIT_MS,
        backoff: Backoff | None = None,
        on_error: ErrorCallback | None = None,
        retry_backoff: Backoff | None = None,
        clock: Clock | None = None,
    ) -> None:
        if not isinstance(queue, str) or not queue:
            raise ValueError("queue must be a non-empty string")
        if not callable(handler):
            raise TypeError("handler must be callable")
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be a positive integer, got {concurrency!r}")
        if max_messages is None:
            max_messages = min(concurrency, defaults.MAX_RECEIVE_MESSAGES)
        if (
            isinstance(max_messages, bool)
            or not isinstance(max_messages, int)
            or not 1 <= max_messages <= defaults.MAX_RECEIVE_MESSAGES
        ):
            raise ValueError(
                f"max_messages must be 1..{defaults.MAX_RECEIVE_MESSAGES}, got {max_messages!r}"
            )
        if (
            isinstance(wait_ms, bool)
            or not isinstance(wait_ms, int)
            or not 0 <= wait_ms <= defaults.MAX_WAIT_MS
        ):
            raise ValueError(f"wait_ms must be 0..{defaults.MAX_WAIT_MS}, got {wait_ms!r}")
        if backoff is not None and not isinstance(backoff, Backoff):
            raise TypeError("backoff must be a Backoff")
        if on_error is not None and not callable(on_error):
            raise TypeError("on_error must be callable")
        self._client = client
        self._queue = queue
        self._handler = handler
        self._concurrency = concurrency
        self._auto_renew = bool(auto_renew)
        self._max_messages = max_messages
        self._wait_ms = wait_ms
        self._backoff = backoff
        self._on_error = on_error
        self._retry = retry_backoff if retry_backoff is not None else Backoff(100, 5000)
        self._clock: Clock = clock if clock is not None else _client_clock(client)

        self._cond = threading.Condition()
        self._inflight: dict[tuple[int, str], _Lease] = {}
        self._work: queue_mod.SimpleQueue[_Lease | None] = queue_mod.SimpleQueue()
        self._counts: dict[str, int] = {f.name: 0 for f in fields(ReceiverStats)}
        self._started = False
        self._stopping = False  # no new claims
        self._deadline_ms: float | None = None  # monotonic; when stop() abandons stragglers
        self._error: BaseException | None = None
        self._in_receive = False
        self._poll_alive = False
        self._renew_stop = False
        self._renew_dirty = False  # a new lease arrived: maybe an earlier renewal is due
        self._drainer: threading.Thread | None = None
        self._renewer: threading.Thread | None = None
        self._internal: set[threading.Thread] = set()
        self._launched = threading.Event()
        self._stopped = threading.Event()

    # -- public surface -------------------------------------------------------------------

    @property
    def queue(self) -> str:
        return self._queue

    @property
    def error(self) -> BaseException | None:
        """The fatal error that stopped the receiver, if any."""
        with self._cond:
            return self._error

    @property
    def running(self) -> bool:
        """Started and not yet fully stopped."""
        return self._started and not self._stopped.is_set()

    def stats(self) -> ReceiverStats:
        with self._cond:
            counts = dict(self._counts)
            counts["in_flight"] = len(self._inflight)
        return ReceiverStats(**counts)

    def start(self) -> Receiver:
        """Start the poll, worker and renewer threads and return at once."""
        with self._cond:
            if self._started:
                raise RuntimeError("a Receiver runs once; create a new one")
            if self._stopping:
                raise RuntimeError("this Receiver was stopped before it started")
            self._started = True
            self._poll_alive = True
            name = f"mqlite-receiver[{self._queue}]"
            threads = [
                threading.Thread(target=self._worker_loop, name=f"{name}-worker-{i}", daemon=True)
                for i in range(self._concurrency)
            ]
            if self._auto_renew:
                self._renewer = threading.Thread(
                    target=self._renew_loop, name=f"{name}-renew", daemon=True
                )
                threads.append(self._renewer)
            # The poll thread last: it is what produces work (and fatal errors).
            threads.append(
                threading.Thread(target=self._poll_loop, name=f"{name}-poll", daemon=True)
            )
            self._internal.update(threads)
        try:
            for t in threads:
                t.start()
        finally:
            self._launched.set()  # the drainer joins threads only once all were started
        return self

    def run(self) -> None:
        """Start (if needed) and block until stopped; raise the error that stopped it.

        Ctrl-C (KeyboardInterrupt) stops the receiver gracefully, then propagates.
        """
        if not self._started:
            self.start()
        try:
            self._stopped.wait()
        except BaseException:
            with contextlib.suppress(errors.MQLiteError):  # the interrupt wins; see .error
                self.stop()
            raise
        self._raise_error()

    def stop(self, timeout: float | None = None) -> None:
        """Stop claiming, drain, settle, stop the renewer, and return.

        In-flight handlers get ``timeout`` seconds (None = as long as they take) to finish
        and be settled; past it their messages are abandoned with no delay (redelivered at
        once) and whatever those handlers do later is ignored. Raises the fatal error that
        stopped the receiver, if one did. Called from a handler (or ``on_error``) it only
        requests the stop: waiting there would wait on itself.
        """
        with self._cond:
            if timeout is not None:
                deadline = self._clock.monotonic_ms() + max(float(timeout), 0.0) * 1000.0
                if self._deadline_ms is None or deadline < self._deadline_ms:
                    self._deadline_ms = deadline
            self._stopping = True
            started = self._started
            self._cond.notify_all()
        if not started:
            self._stopped.set()
            return
        self._begin_drain()
        if threading.current_thread() in self._internal:
            return
        self._stopped.wait()
        self._raise_error()

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.stop()
        except errors.MQLiteError:
            if exc_type is None:
                raise  # otherwise keep the body's exception; ours stays in .error

    def __repr__(self) -> str:
        state = "running" if self.running else ("stopped" if self._started else "new")
        return f"<Receiver queue={self._queue!r} concurrency={self._concurrency} {state}>"

    # -- claiming -------------------------------------------------------------------------

    def _poll_loop(self) -> None:
        """Claim at most the free slots per receive; dispatch; retry transient errors."""
        attempt_id: str | None = None
        failures = 0
        try:
            while True:
                with self._cond:
                    while not self._stopping and len(self._inflight) >= self._concurrency:
                        self._cond.wait()
                    if self._stopping:
                        return
                    n = min(self._concurrency - len(self._inflight), self._max_messages)
                    self._in_receive = True
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
                    self._pause(max(float(self._retry.delay_ms(failures)), RETRY_FLOOR_MS))
                    continue
                attempt_id = None
                failures = 0
                leftovers = self._dispatch(got, n)
                if leftovers:
                    self._abandon_all(
                        leftovers, "abandoned_on_stop" if self._stopping else "abandoned"
                    )
                if not got:
                    elapsed = self._clock.monotonic_ms() - started
                    if elapsed < EMPTY_POLL_FLOOR_MS:
                        self._pause(EMPTY_POLL_FLOOR_MS - elapsed)
        finally:
            with self._cond:
                self._in_receive = False
                self._poll_alive = False
                self._cond.notify_all()

    def _leave_receive(self) -> bool:
        """Mark the receive as over; True if the receiver is stopping meanwhile."""
        with self._cond:
            self._in_receive = False
            self._cond.notify_all()
            return self._stopping

    def _dispatch(self, got: list[Message], asked: int) -> list[Message]:
        """Hand claimed messages to the workers; return those to abandon instead.

        Once stopping (a claim that raced stop()), or beyond what was asked for (a client
        that overshot), a message is abandoned at once rather than run.
        """
        leftovers: list[Message] = []
        with self._cond:
            self._in_receive = False
            for i, msg in enumerate(got):
                if not msg.lock_token:
                    continue  # nothing to settle or renew (not a peek-lock claim)
                self._counts["received"] += 1
                if self._stopping or i >= asked:
                    leftovers.append(msg)
                    continue
                lease = _Lease(msg)
                self._inflight[lease.key] = lease
                self._work.put(lease)
            self._renew_dirty = True
            self._cond.notify_all()
        return leftovers

    def _pause(self, ms: float) -> None:
        """Wait ``ms`` unless stop() is called first (never a bare sleep: stop is prompt)."""
        with self._cond:
            end = self._clock.monotonic_ms() + ms
            while not self._stopping:
                remaining = end - self._clock.monotonic_ms()
                if remaining <= 0:
                    return
                self._cond.wait(remaining / 1000.0)

    # -- handling and settling ------------------------------------------------------------

    def _worker_loop(self) -> None:
        while True:
            lease = self._work.get()
            if lease is None:
                return
            try:
                self._process(lease)
            finally:
                with self._cond:
                    self._inflight.pop(lease.key, None)
                    self._cond.notify_all()

    def _process(self, lease: _Lease) -> None:
        msg = lease.message
        verb: str
        reason = description = ""
        delay = 0
        try:
            self._handler(msg)
            verb = "complete"
        except DeadLetter as dl:
            verb, reason, description = "reject", dl.reason, dl.description
        except BaseException as exc:  # a handler failure of any kind must not kill a slot
            verb = "abandon"
            self._count("handler_errors")
            if self._on_error is None:
                log.warning(
                    "handler failed on message %d of %r (delivery %d); abandoning",
                    msg.seq_number,
                    self._queue,
                    msg.delivery_count,
                    exc_info=exc,
                )
            self._report(exc, msg)
            if self._backoff is not None:
                delay = self._backoff.delay_ms(msg.delivery_count)
        with self._cond:
            if lease.released:
                return  # stop() already abandoned it; this outcome came too late
            lease.settling = True
        q, seq, token = self._queue, msg.seq_number, msg.lock_token
        try:
            if verb == "complete":
                self._client.complete(q, seq, token)
                self._count("completed")
            elif verb == "reject":
                self._client.reject(q, seq, token, reason, description)
                self._count("dead_lettered")
            else:
                self._client.abandon(q, seq, token, delay)
                self._count("abandoned")
        except Exception as exc:
            self._settle_failed(verb, msg, exc)

    def _settle_failed(self, verb: str, msg: Message, exc: Exception) -> None:
        """A refused settlement never stops the loop (the broker redelivers), unless the
        credential or the client itself is gone."""
        if isinstance(exc, errors.LockLost):
            self._count("lock_lost")
            log.warning(
                "%s of message %d in %r: lock lost (it will be redelivered)",
                verb,
                msg.seq_number,
                self._queue,
            )
        elif isinstance(exc, FATAL_ERRORS):
            self._count("settle_errors")
            self._fail(exc)
        else:
            self._count("settle_errors")
            log.warning("%s of message %d in %r failed: %s", verb, msg.seq_number, self._queue, exc)
        self._report(exc, msg)

    def _abandon_all(self, msgs: Sequence[Message], counter: str) -> None:
        """Abandon with no delay (stop(): redeliver at once); failures are only counted."""
        for msg in msgs:
            try:
                self._client.abandon(self._queue, msg.seq_number, msg.lock_token, 0)
                self._count(counter)
            except Exception as exc:
                if isinstance(exc, errors.LockLost):
                    self._count("lock_lost")
                else:
                    self._count("settle_errors")
                log.warning(
                    "abandon of message %d in %r at stop failed: %s",
                    msg.seq_number,
                    self._queue,
                    exc,
                )
                self._report(exc, msg)

    # -- lease renewal --------------------------------------------------------------------

    def _renewable(self) -> list[_Lease]:
        return [x for x in self._inflight.values() if not x.lost and not x.released]

    def _next_delay_ms(self, leases: list[_Lease]) -> float:
        known = [x.locked_until_ms for x in leases if x.locked_until_ms > 0]
        if not known:
            return RENEW_UNKNOWN_DEADLINE_MS
        return renewal_delay_ms(min(known) - self._clock.now_ms())

    def _renew_loop(self) -> None:
        """Renew every live in-flight lease when a third of the tightest one has passed.

        The due time is kept across wake-ups (recomputed only after a pass, or pulled
        earlier by a new lease): recomputing "a third of what is left" on every wake-up
        would creep toward the deadline instead of renewing.
        """
        due: float | None = None
        while True:
            with self._cond:
                while True:
                    if self._renew_stop or self._error is not None:
                        return
                    leases = self._renewable()
                    if not leases:
                        due = None
                        self._cond.wait()
                        continue
                    now = self._clock.monotonic_ms()
                    if due is None or self._renew_dirty:
                        candidate = now + self._next_delay_ms(leases)
                        due = candidate if due is None else min(due, candidate)
                        self._renew_dirty = False
                    if now >= due:
                        break
                    self._cond.wait((due - now) / 1000.0)
            failed = self._renew_pass(leases)
            due = None
            if failed:
                with self._cond:
                    left = self._renewable()
                    delay = self._next_delay_ms(left) if left else RENEW_UNKNOWN_DEADLINE_MS
                due = self._clock.monotonic_ms() + max(delay, RETRY_FLOOR_MS)

    def _renew_pass(self, leases: list[_Lease]) -> bool:
        """One RenewBatch per ≤512 leases; returns True if any call failed."""
        failed = False
        step = defaults.RENEW_BATCH_MAX
        for start in range(0, len(leases), step):
            chunk = leases[start : start + step]
            items = [lease.key for lease in chunk]
            try:
                results = list(self._client.renew_batch(self._queue, items))
            except FATAL_ERRORS as exc:
                self._count("renew_errors")
                self._fail(exc)
                return True
            except Exception as exc:
                failed = True
                self._count("renew_errors")
                log.warning("renew_batch on %r failed: %s", self._queue, exc)
                self._report(exc, None)
                continue
            self._apply_renewals(chunk, results)
        if failed:
            self._expire_overdue()
        return failed

    def _apply_renewals(self, chunk: list[_Lease], results: list[BatchResult]) -> None:
        """Adopt the committed deadlines; a refused or already-lapsed lease is lost.

        ``locked_until_ms`` is authoritative and compared against our own clock: ok=True
        only meant "live when the broker's statement finished" (api-reference RenewBatch).
        """
        if len(results) == len(chunk) and all(
            r.seq_number == x.message.seq_number for r, x in zip(results, chunk, strict=True)
        ):
            pairs = list(zip(chunk, results, strict=True))
        else:  # a client that reorders or drops items: match by seq, ignore the missing
            by_seq = {r.seq_number: r for r in results}
            pairs = [
                (x, by_seq[x.message.seq_number]) for x in chunk if x.message.seq_number in by_seq
            ]
        now = self._clock.now_ms()
        newly_lost: list[Message] = []
        with self._cond:
            self._counts["renew_calls"] += 1
            for lease, res in pairs:
                if lease.lost or lease.released:
                    continue
                if res.ok and res.locked_until_ms == 0:
                    self._counts["renewed"] += 1
                    lease.locked_until_ms = 0  # ok but no deadline: fall back to the 1 s cadence
                elif res.ok and res.locked_until_ms > now:
                    self._counts["renewed"] += 1
                    lease.locked_until_ms = max(lease.locked_until_ms, res.locked_until_ms)
                else:
                    lease.lost = True
                    if not lease.settling:  # settled meanwhile: the refusal is expected
                        self._counts["leases_lost"] += 1
                        newly_lost.append(lease.message)
        for msg in newly_lost:
            self._lease_lost(msg, "the broker refused the renewal or the lease had lapsed")

    def _expire_overdue(self) -> None:
        """After a failed pass, leases whose deadline has passed by our clock are lost: no
        renewal can revive them, and retrying them forever would be a busy loop."""
        now = self._clock.now_ms()
        newly_lost: list[Message] = []
        with self._cond:
            for lease in self._renewable():
                if 0 < lease.locked_until_ms <= now:
                    lease.lost = True
                    if not lease.settling:
                        self._counts["leases_lost"] += 1
                        newly_lost.append(lease.message)
        for msg in newly_lost:
            self._lease_lost(msg, "its deadline passed while renewals were failing")

    def _lease_lost(self, msg: Message, why: str) -> None:
        log.warning(
            "lease on message %d in %r lost (%s); the handler's settlement will be refused",
            msg.seq_number,
            self._queue,
            why,
        )
        self._report(errors.LockLost(f"lease on message {msg.seq_number} lost: {why}"), msg)

    # -- stopping -------------------------------------------------------------------------

    def _fail(self, exc: BaseException) -> None:
        """A fatal error: remember the first, stop claiming, drain in the background."""
        with self._cond:
            if self._error is None:
                self._error = exc
                log.error("receiver on %r stopping: %s", self._queue, exc)
            self._stopping = True
            self._cond.notify_all()
        self._begin_drain()

    def _begin_drain(self) -> None:
        with self._cond:
            if self._drainer is not None or not self._started:
                return
            self._drainer = threading.Thread(
                target=self._drain, name=f"mqlite-receiver[{self._queue}]-stop", daemon=True
            )
            self._internal.add(self._drainer)
            drainer = self._drainer
        drainer.start()

    def _drain(self) -> None:
        """Wait for handlers (until the stop deadline), abandon stragglers, wind down."""
        try:
            self._launched.wait()
            with self._cond:
                while any(not x.released for x in self._inflight.values()):
                    if self._deadline_ms is None:
                        self._cond.wait()
                        continue
                    remaining = self._deadline_ms - self._clock.monotonic_ms()
                    if remaining <= 0:
                        break
                    self._cond.wait(remaining / 1000.0)
                stragglers: list[Message] = []
                for lease in self._inflight.values():
                    if not lease.settling and not lease.released:
                        lease.released = True
                        stragglers.append(lease.message)
                self._cond.notify_all()
            if stragglers:
                log.warning(
                    "stop: %d handler(s) on %r still running; abandoning their messages",
                    len(stragglers),
                    self._queue,
                )
                self._abandon_all(stragglers, "abandoned_on_stop")
            with self._cond:
                # Settlements already under way finish (they are short); a long poll still
                # parked is left to abandon whatever it brings back.
                while any(x.settling and not x.released for x in self._inflight.values()) or (
                    self._poll_alive and not self._in_receive
                ):
                    self._cond.wait()
                self._renew_stop = True
                self._cond.notify_all()
            renewer = self._renewer
            if renewer is not None and renewer is not threading.current_thread():
                renewer.join()
            for _ in range(self._concurrency):
                self._work.put(None)
        finally:
            self._stopped.set()

    # -- helpers --------------------------------------------------------------------------

    def _count(self, name: str, n: int = 1) -> None:
        with self._cond:
            self._counts[name] += n

    def _report(self, exc: BaseException, msg: Message | None) -> None:
        if self._on_error is None:
            return
        try:
            self._on_error(exc, msg)
        except Exception:
            log.exception("on_error callback raised (ignored)")

    def _raise_error(self) -> None:
        with self._cond:
            err = self._error
        if err is not None:
            raise err
