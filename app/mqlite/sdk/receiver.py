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

Thread model: one poll thread (``claiming.py``), ``concurrency`` daemon worker threads
(``handling.py``), one renewer thread (``lease_renewal.py``, with ``auto_renew``) and one
short-lived drainer at stop (``stopping.py``): each a part over the shared state of
``receiver_core.py``, behind one condition variable; nothing is global. This module is
the facade: it checks the options, composes the parts and runs the public lifecycle.
"""

from __future__ import annotations

import contextlib
import threading
from types import TracebackType

from mqlite import defaults, errors
from mqlite.clock import Clock
from mqlite.sdk.claiming import Claiming
from mqlite.sdk.consumer import (
    Backoff,
    DeadLetter,
    ErrorCallback,
    Handler,
    ReceiverClient,
    ReceiverStats,
    renewal_delay_ms,
)
from mqlite.sdk.handling import MessageHandling
from mqlite.sdk.lease_renewal import LeaseRenewal
from mqlite.sdk.receiver_core import ReceiverCore
from mqlite.sdk.stopping import Stopping

__all__ = [
    "Backoff",
    "DeadLetter",
    "Receiver",
    "ReceiverClient",
    "ReceiverStats",
    "renewal_delay_ms",
]


class Receiver(ReceiverCore):
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
        super().__init__(
            client,
            queue,
            handler,
            concurrency=concurrency,
            auto_renew=auto_renew,
            max_messages=max_messages,
            wait_ms=wait_ms,
            backoff=backoff,
            on_error=on_error,
            retry_backoff=retry_backoff,
            clock=clock,
            transactional=transactional,
        )
        # Its parts, one per thread (the stopping part first: the others fail through it).
        self._stopper = Stopping(self)
        self._handling = MessageHandling(self, self._stopper)
        self._renewal = LeaseRenewal(self, self._stopper)
        self._claiming = Claiming(self, self._stopper)

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
                threading.Thread(target=self._claiming._poll_loop, name=f"{name}-poll", daemon=True)
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
        self._stopper._begin_drain()
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
