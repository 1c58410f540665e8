"""Running handlers and settling their outcome, for the ``Receiver``: a worker thread takes
a claimed message, runs the handler, and completes it (returned), rejects it
(``DeadLetter``) or abandons it (raised) with the exception as its ``error`` and the delay
left to the queue's retry policy (the ``Backoff``'s only when the queue has none). A
part of the receiver (``receiver_core.py``), sharing its state behind its one condition
variable.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from mqlite import errors
from mqlite.sdk.consumer import (
    FATAL_ERRORS,
    DeadLetter,
    Lease,
    error_text,
    log,
)
from mqlite.sdk.inbox import TxClient, TxHandler
from mqlite.sdk.receiver_core import ReceiverCore, ReceiverPart
from mqlite.types import Message

if TYPE_CHECKING:
    from mqlite.sdk.stopping import Stopping


class _Released(Exception):
    """stop() abandoned the message while its transactional handler ran."""


class MessageHandling(ReceiverPart):
    """The worker threads' part of the ``Receiver``."""

    def __init__(self, receiver: ReceiverCore, stopper: Stopping) -> None:
        super().__init__(receiver)
        self._work = receiver._work
        self._handler = receiver._handler
        self._tx_client = receiver._tx_client
        self._slow_tx = receiver._slow_tx
        self._backoff = receiver._backoff
        self._on_error = receiver._on_error
        self._queue_retries: bool | None = None  # the queue has a retry policy (None: not asked)
        self._fail = stopper._fail

    def _failure_delay(self, msg: Message) -> int:
        """The abandon delay after a handler failure: 0 (the queue's retry policy decides,
        or at once) unless a ``Backoff`` was given AND the queue has no policy of its own."""
        if self._backoff is None or self._queue_has_retry_policy():
            return 0
        return self._backoff.delay_ms(msg.delivery_count)

    def _queue_has_retry_policy(self) -> bool:
        """Asked once (``get_queue``); a client without it, or a credential that may not
        read the queue's config, keeps the Receiver's own backoff."""
        known = self._queue_retries
        if known is None:
            get_queue = getattr(self._client, "get_queue", None)
            try:
                info = get_queue(self._queue) if callable(get_queue) else None
                known = bool(info is not None and info.config.retry_initial_delay_ms > 0)
            except Exception as exc:
                log.info("queue %r: retry policy unknown (%s); using the backoff", self._queue, exc)
                known = False
            self._queue_retries = known
        return known

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
        if self._tx_client is not None:
            self._process_in_tx(lease, self._tx_client)
            return
        msg = lease.message
        verb: str
        reason = description = error = ""
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
            delay = self._failure_delay(msg)
            error = error_text(exc)
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
                self._client.abandon(q, seq, token, delay, error)
                self._count("abandoned")
        except Exception as exc:
            self._settle_failed(verb, msg, exc)

    def _process_in_tx(self, lease: Lease, client: TxClient) -> None:
        """Handler and completion in ONE transaction (inbox.py); on failure, the rollback
        comes first, then the abandon or the dead-letter, outside it."""
        msg = lease.message
        handler: TxHandler = self._handler  # type: ignore[assignment]
        started = time.monotonic()
        outcome: BaseException | None = None
        try:
            with client.tx() as tx:
                handler(msg, tx)
                with self._cond:
                    if lease.released:  # stop() gave it back: commit none of its effects
                        raise _Released
                    lease.settling = True
                tx.complete(msg)
        except BaseException as exc:
            outcome = exc
        elapsed_ms = (time.monotonic() - started) * 1000
        if self._slow_tx.should_warn(elapsed_ms):
            log.warning(
                "a transactional handler held the writer for %.0f ms (every other call on the "
                "database waits meanwhile): keep handlers short",
                elapsed_ms,
            )
        if outcome is None:
            self._count("completed")
        elif isinstance(outcome, _Released):
            return
        elif isinstance(outcome, errors.LockLost):
            self._settle_failed("complete", msg, outcome)
        else:
            self._settle_after_failure(lease, outcome)

    def _settle_after_failure(self, lease: Lease, exc: BaseException) -> None:
        """The transaction rolled back: dead-letter (``DeadLetter``) or abandon it."""
        msg = lease.message
        with self._cond:
            if lease.released:
                return
            lease.settling = True
        q, seq, token = self._queue, msg.seq_number, msg.lock_token
        try:
            if isinstance(exc, DeadLetter):
                self._client.reject(q, seq, token, exc.reason, exc.description)
                self._count("dead_lettered")
                return
            self._count("handler_errors")
            self._report(exc, msg)
            if self._on_error is None:
                log.warning(
                    "transactional handler failed on message %d of %r; rolled back, abandoning",
                    seq,
                    q,
                    exc_info=exc,
                )
            self._client.abandon(q, seq, token, self._failure_delay(msg), error_text(exc))
            self._count("abandoned")
        except Exception as err:
            self._settle_failed("reject" if isinstance(exc, DeadLetter) else "abandon", msg, err)

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
