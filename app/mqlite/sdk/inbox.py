"""The transactional Receiver mode (``Receiver(..., transactional=True)``, embedded only).

Each message is handled inside ``client.tx()``: the handler gets ``(message, tx)``, writes
its own rows with ``tx.execute`` and sends follow-up messages with ``tx.send``; when it
returns, the message is completed in that same transaction. Business writes, follow-up
sends and the completion commit together or not at all ("consume -> transform -> produce",
exactly once in effect inside the database). A handler that raises rolls everything back
and the message is abandoned (with the backoff) or dead-lettered (``DeadLetter``) after
the rollback; a lease that expired meanwhile makes the completion ``LockLost`` and rolls
the block back too, so the redelivery starts from a clean slate.

The transaction holds the writer while the handler runs: every other call on the database
waits (lease renewals included), so handlers must be short. Each one is timed; one slower
than ``SLOW_TX_MS`` is logged as a warning (once per minute per receiver).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

from mqlite.types import Message

SLOW_TX_MS = 250.0
WARN_EVERY_S = 60.0

TxHandler = Callable[[Message, Any], object]


class TxClient(Protocol):
    """What the transactional mode needs: the embedded client's ``tx()``."""

    def tx(self) -> AbstractContextManager[Any]: ...


def require_tx_client(client: object) -> TxClient:
    if not callable(getattr(client, "tx", None)):
        raise TypeError(
            "transactional=True needs the embedded client (mqlite.open_embedded): over HTTP a "
            "settlement cannot share your database's transaction; make handlers idempotent "
            "and send with a message_id on a dedup queue instead (docs/embedded.md)"
        )
    return client  # type: ignore[return-value]


class SlowTxWarning:
    """Rate-limits the 'this handler held the writer too long' warning."""

    def __init__(self) -> None:
        self._last = float("-inf")

    def should_warn(self, elapsed_ms: float) -> bool:
        if elapsed_ms < SLOW_TX_MS:
            return False
        now = time.monotonic()
        if now - self._last < WARN_EVERY_S:
            return False
        self._last = now
        return True
