"""The pieces of the managed consumer that are policy, not machinery: the handler's
outcome signal (``DeadLetter``), the redelivery ``Backoff``, the renewal cadence of
original-behaviour §9, the client surface a ``Receiver`` needs, its statistics, and the
per-message lease record. ``receiver.py`` is the facade over the loops (its parts:
``claiming.py``, ``handling.py``, ``lease_renewal.py``, ``stopping.py``).
"""

from __future__ import annotations

import logging
import math
import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, cast

from mqlite import errors
from mqlite.clock import SYSTEM_CLOCK, Clock
from mqlite.types import BatchResult, Message

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


ERROR_TEXT_MAX_BYTES = 4096
"""Abandon's ``error`` limit (defaults.MAX_ERROR_BYTES): a handler's exception is clipped to it."""


def error_text(exc: BaseException) -> str:
    """``Type: message`` of a handler's exception, clipped to 4 KiB of UTF-8 (on a
    character boundary), for ``abandon(error=...)``: the message's ``last_error``."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    raw = text.encode("utf-8", "replace")
    if len(raw) <= ERROR_TEXT_MAX_BYTES:
        return raw.decode("utf-8")
    return raw[: ERROR_TEXT_MAX_BYTES - 3].decode("utf-8", "ignore") + "..."


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

    def abandon(
        self, queue: str, seq_number: int, lock_token: str, delay_ms: int, error: str, /
    ) -> None: ...

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


class Lease:
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


def client_clock(client: object) -> Clock:
    """The clock the client stamps lease deadlines with, if it exposes one (the embedded
    engine does); otherwise the system clock, which a remote broker's deadlines follow."""
    own = getattr(client, "clock", None)
    if callable(getattr(own, "now_ms", None)) and callable(getattr(own, "monotonic_ms", None)):
        return cast(Clock, own)
    return SYSTEM_CLOCK


T = TypeVar("T")


class Shared(Generic[T]):
    """A field of the ``Receiver``'s state (``receiver_core.py``) that one of its parts
    reassigns, read and written in place on the core under the receiver's condition
    variable: the part keeps the name the field has on the core."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, part: Any, kind: Any = None) -> T:
        return getattr(part._receiver, self._name)  # type: ignore[no-any-return]

    def __set__(self, part: Any, value: T) -> None:
        setattr(part._receiver, self._name, value)
