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
import queue as queue_mod
import secrets
import threading
from dataclasses import fields
from types import TracebackType

from mqlite import defaults, errors
from mqlite.clock import Clock
from mqlite.sdk.consumer import (
    EMPTY_POLL_FLOOR_MS,
    FATAL_ERRORS,
    RETRY_FLOOR_MS,
    Backoff,
    DeadLetter,
    ErrorCallback,
    Handler,
    Lease,
    ReceiverClient,
    ReceiverStats,
    client_clock,
    log,
    renewal_delay_ms,
)
from mqlite.sdk.handling import MessageHandling
from mqlite.sdk.inbox import SlowTxWarning, require_tx_client
from mqlite.sdk.lease_renewal import LeaseRenewal
from mqlite.sdk.retry import retry_after_ms
from mqlite.types import Message, ReceiveMode

__all__ = [
    "Backoff",
    "DeadLetter",
    "Receiver",
    "ReceiverClient",
    "ReceiverStats",
    "renewal_delay_ms",
]


class Receiver:
    """A managed consume loop over ``client`` for ``queue``.

    ``handler(message)`` runs on a pool of ``concurrency`` threads:

    - returns → ``complete``;
    - raises :class:`DeadLetter` → ``reject`` (dead-letter) with its reason/description;
    - raises anything else → ``abandon`` with the exception (``Type: message``, clipped to
      4 KiB) as its ``error`` (the message's ``last_error``). The delay is the queue's:
      its retry policy when it has one (``retry_initial_delay_ms`` > 0), else
      ``backoff.delay_ms(message.delivery_count)`` when a :class:`Backoff` is given, else
      none (redelivered at once). Whether the queue has a policy is asked once, with
      ``get_queue``, only when a Backoff is given (a key that may not read it keeps the
      Backoff); the queue's ``max_delivery_count`` dead-letters it eventually.

    Options: ``max_messages`` caps one receive (default ``concurrency``, at most 256; a
    receive never asks for more than the free slots); ``wait_ms`` is the long poll
    (0..20000); ``auto_renew`` keeps leases alive with ``renew_batch`` while handlers run;
    ``on_error(exc, message_or_None)`` hears about handler failures, lost leases, failed
    settlements and receive/renew errors (it runs on the receiver's threads: keep it quick
    and thread-safe); ``retry_backoff`` paces receive retries (default 100 ms .. 5 s, full
    jitter); ``clock`` is what lease deadlines are compared against: by default the
    client's own ``clock`` when it has one (the embedded engine stamps deadlines with it,
    FakeClock included), else the system clock (a remote broker's epoch-ms deadlines).
    ``transactional=True`` (embedded client only, ``inbox.py``): ``handler(message, tx)``
    runs inside ``client.tx()`` and the message is completed in that same transaction, so
    its business writes and follow-up sends commit with the completion or not at all.

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
        transactional: bool = False,
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
        self._clock: Clock = clock if clock is not None else client_clock(client)
        self._tx_client = require_tx_client(client) if transactional else None
        self._slow_tx = SlowTxWarning()

        self._cond = threading.Condition()
        self._inflight: dict[tuple[int, str], Lease] = {}
        self._work: queue_mod.SimpleQueue[Lease | None] = queue_mod.SimpleQueue()
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
        # Its parts (each the state above it uses, by the same names): the worker threads'
        # and the renewer thread's.
        self._handling = MessageHandling(self)
        self._renewal = LeaseRenewal(self)

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
                threading.Thread(
                    target=self._handling._worker_loop, name=f"{name}-worker-{i}", daemon=True
                )
                for i in range(self._concurrency)
            ]
            if self._auto_renew:
                self._renewer = threading.Thread(
                    target=self._renewal._renew_loop, name=f"{name}-renew", daemon=True
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
                    pause = max(float(self._retry.delay_ms(failures)), RETRY_FLOOR_MS)
                    self._pause(max(pause, retry_after_ms(exc)))  # a 429: the broker's wait
                    continue
                attempt_id = None
                failures = 0
                leftovers = self._dispatch(got, n)
                if leftovers:
                    self._handling._abandon_all(
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
                lease = Lease(msg)
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
                self._handling._abandon_all(stragglers, "abandoned_on_stop")
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
