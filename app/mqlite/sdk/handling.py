"""Running handlers and settling their outcome, for the ``Receiver``: a worker thread takes
a claimed message, runs the handler, and completes it (returned), rejects it
(``DeadLetter``) or abandons it with the backoff delay (raised). A mixin sharing the
receiver's state behind its one condition variable.
"""

from __future__ import annotations

import queue as queue_mod
from collections.abc import Sequence

from mqlite import errors
from mqlite.sdk.consumer import (
    FATAL_ERRORS,
    Backoff,
    DeadLetter,
    ErrorCallback,
    Handler,
    Lease,
    log,
)
from mqlite.sdk.lease_renewal import LeaseRenewal
from mqlite.types import Message


class MessageHandling(LeaseRenewal):
    """The worker threads' half of the ``Receiver``."""

    _handler: Handler
    _backoff: Backoff | None
    _on_error: ErrorCallback | None
    _work: queue_mod.SimpleQueue[Lease | None]

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

    def _process(self, lease: Lease) -> None:
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
