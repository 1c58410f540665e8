"""Stopping the ``Receiver`` without losing a message: a fatal error or ``stop()`` ends the
claiming, and one short-lived drainer thread waits for the handlers (until the stop
deadline), abandons the stragglers with no delay so they are redelivered at once, lets the
settlements under way finish, stops the renewer and the workers, and marks the receiver
stopped. A part of the receiver (``receiver_core.py``), sharing its state behind its one
condition variable.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from mqlite import errors
from mqlite.sdk.consumer import Shared, log
from mqlite.sdk.receiver_core import ReceiverCore, ReceiverPart
from mqlite.types import Message


class Stopping(ReceiverPart):
    """The drainer thread's part of the ``Receiver``, and the fatal-error path of all."""

    _error = Shared[BaseException | None]()
    _stopping = Shared[bool]()
    _started = Shared[bool]()
    _deadline_ms = Shared[float | None]()
    _drainer = Shared[threading.Thread | None]()
    _renewer = Shared[threading.Thread | None]()
    _poll_alive = Shared[bool]()
    _in_receive = Shared[bool]()
    _renew_stop = Shared[bool]()

    def __init__(self, receiver: ReceiverCore) -> None:
        super().__init__(receiver)
        self._concurrency = receiver._concurrency
        self._work = receiver._work
        self._internal = receiver._internal
        self._launched = receiver._launched
        self._stopped = receiver._stopped

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
            drainer = threading.Thread(
                target=self._drain, name=f"mqlite-receiver[{self._queue}]-stop", daemon=True
            )
            self._drainer = drainer
            self._internal.add(drainer)
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

    def _abandon_all(self, msgs: Sequence[Message], counter: str) -> None:
        """Abandon with no delay (stop(): redeliver at once); failures are only counted."""
        for msg in msgs:
            try:
                self._client.abandon(self._queue, msg.seq_number, msg.lock_token, 0, "")
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
