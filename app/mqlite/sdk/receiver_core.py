"""The state every part of the ``Receiver`` shares, behind its one condition variable.

The Receiver is split like the engine (``engine/part.py``): this core holds its settings
and its shared state; each thread of the receiver is a part over it, in its own module --
``claiming.py`` (the poll thread), ``handling.py`` (the worker threads), ``lease_renewal.py``
(the renewer thread), ``stopping.py`` (fatal errors and the drainer) -- and ``receiver.py``
is the facade that validates the options, composes the parts and offers the public
lifecycle. A part binds the core's fields that are set once as plain attributes (no
indirection on the hot path) and reaches the few it reassigns through ``Shared``, so its
verbs read ``self._inflight``, ``self._stopping`` by the names they had in one class.
"""

from __future__ import annotations

import queue as queue_mod
import threading
from dataclasses import fields

from mqlite.clock import Clock
from mqlite.sdk.consumer import (
    Backoff,
    ErrorCallback,
    Handler,
    Lease,
    ReceiverClient,
    ReceiverStats,
    client_clock,
    log,
)
from mqlite.sdk.inbox import SlowTxWarning, require_tx_client
from mqlite.types import Message


class ReceiverCore:
    """Settings (already validated by the facade) and the state the threads share."""

    def __init__(
        self,
        client: ReceiverClient,
        queue: str,
        handler: Handler,
        *,
        concurrency: int,
        auto_renew: bool,
        max_messages: int,
        wait_ms: int,
        backoff: Backoff | None,
        on_error: ErrorCallback | None,
        retry_backoff: Backoff | None,
        clock: Clock | None,
        transactional: bool,
    ) -> None:
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

    def _count(self, name: str, n: int = 1) -> None:
        with self._cond:
            self._counts[name] += n

    def _report(self, exc: BaseException, msg: Message | None) -> None:
        """Tell ``on_error``; a callback that raises is logged, never allowed to kill a thread."""
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


class ReceiverPart:
    """A part of the Receiver (one thread's verbs): the core's set-once state every part
    uses, bound as plain attributes under the core's names; a part binds the rest it
    needs itself and declares the fields it reassigns as ``Shared``."""

    def __init__(self, receiver: ReceiverCore) -> None:
        self._receiver = receiver
        self._client = receiver._client
        self._queue = receiver._queue
        self._clock = receiver._clock
        self._cond = receiver._cond
        self._inflight = receiver._inflight
        self._counts = receiver._counts
        self._count = receiver._count
        self._report = receiver._report
