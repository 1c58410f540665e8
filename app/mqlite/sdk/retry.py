"""When a remote call may be sent again, and how long to wait first: ONE sans-IO state
machine (``Attempts``) that the sync client (``HttpClient._do``), the asyncio one
(``AsyncClient._do``) drive with their own sleep, and the 429 wait every poller uses.

The rule: a request is repeated only if repeating it cannot change the outcome.

- A connection that could not be opened sent nothing: every call may retry that.
- Once bytes may have reached the broker, only ``Call.safe`` calls retry (see
  ``mqlite.sdk.calls``): a lost Send answer is never resent blindly, because the first one
  may have committed and the client cannot know whether the queue deduplicates.
- A 503 (``outcome_unknown`` from a remote store, or a proxy's "service unavailable") is
  retried for safe calls only; other statuses are answers, never retried.
- A 429 (``resource_exhausted``: the key's rate limit) is refused before anything runs, so
  every call retries it, after the broker's ``Retry-After`` capped at
  ``max_retry_after_ms`` (a client never sleeps for minutes inside one call).

Retries are bounded (``attempts`` in total) with exponential backoff and full jitter,
capped. When they run out, a transport failure surfaces as ``ConnectionFailed`` (wire
code ``unavailable``) and a 503 or 429 as the broker's own error.

Sans-IO: ``Attempts`` never sleeps, sends or reads; it is told what happened and answers
``Retry(wait_s)`` or ``GiveUp(error)``. The success path never creates one (a client
builds it at the first failure), so it costs a 200 nothing.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from mqlite import errors, wire


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``attempts`` tries in total (1 = never retry); backoff ``base_ms * 2**n``, capped at
    ``max_backoff_ms``, with full jitter (a uniform draw below that bound)."""

    attempts: int = 4
    base_ms: int = 50
    max_backoff_ms: int = 1000
    max_retry_after_ms: int = 5000

    def __post_init__(self) -> None:
        if min(self.base_ms, self.max_backoff_ms, self.max_retry_after_ms) < 0 or self.attempts < 1:
            raise errors.InvalidArgument("retry attempts must be >= 1 and backoffs >= 0")

    def backoff_s(
        self, retry: int, draw: Callable[[float, float], float] = random.uniform
    ) -> float:
        """Seconds to wait before retry number ``retry`` (0-based)."""
        bound = min(self.max_backoff_ms, self.base_ms * (2**retry))
        return draw(0, bound) / 1000.0

    def retry_after_s(self, exc: errors.MQLiteError) -> float:
        """Seconds to wait after a 429: the broker's ``Retry-After``, capped."""
        return retry_after_ms(exc, self.max_retry_after_ms) / 1000.0


def retry_after_ms(exc: BaseException, cap_ms: float = float("inf")) -> float:
    """The wait a rate-limited key (429 ``resource_exhausted``) was told to observe, in ms,
    capped at ``cap_ms``; 0 for any other error. The one place the SDK's retry, the
    ``Receiver``'s poll and the Celery transport's poll read ``Retry-After``: a poller
    waits at least this long before asking again."""
    if not isinstance(exc, errors.ResourceExhausted):
        return 0.0
    return float(min(exc.retry_after_s * 1000, cap_ms))


@dataclass(frozen=True, slots=True)
class Retry:
    """Wait ``wait_s`` seconds, then send the same request again."""

    wait_s: float


@dataclass(frozen=True, slots=True)
class GiveUp:
    """Stop: raise ``error`` (from the transport's exception, where there was one)."""

    error: errors.MQLiteError


Decision = Retry | GiveUp


class Attempts:
    """The retry state of one call: how many attempts were made, what the next step is.

    ``failed`` (the transport raised: ``sent`` says whether bytes may have reached the
    broker) and ``answered`` (a status other than 200) each count one attempt and decide.
    """

    __slots__ = ("attempt", "draw", "name", "policy", "safe")

    def __init__(
        self,
        policy: RetryPolicy,
        name: str,
        safe: bool,
        draw: Callable[[float, float], float] = random.uniform,
    ) -> None:
        self.policy = policy
        self.name = name  # the route, for the error's words
        self.safe = safe
        self.draw = draw  # the jitter's uniform draw (tests pin it)
        self.attempt = 0  # attempts made so far

    def _next(self, may_retry: bool, error: errors.MQLiteError, wait_s: float | None) -> Decision:
        self.attempt += 1
        if not may_retry or self.attempt >= self.policy.attempts:
            return GiveUp(error)
        if wait_s is None:
            wait_s = self.policy.backoff_s(self.attempt - 1, self.draw)
        return Retry(wait_s)

    def failed(self, exc: BaseException, *, sent: bool) -> Decision:
        """The transport failed: before sending anything (``sent=False``, any call
        retries) or after (only safe calls retry)."""
        error = unavailable(self.name, exc, sent=sent)
        return self._next(self.safe or not sent, error, None)

    def answered(self, status: int, body: bytes) -> Decision:
        """The broker answered ``status`` (not 200) with ``body``."""
        error = wire.error_from_response(status, body)
        if status == 429:  # refused before running: any call retries, after Retry-After
            return self._next(True, error, self.policy.retry_after_s(error))
        return self._next(status == 503 and self.safe, error, None)


def unavailable(what: str, exc: BaseException, *, sent: bool) -> errors.MQLiteError:
    from mqlite.sdk.endpoint import ConnectionFailed

    # For people: the OS's words ("Connection refused"), not a Python class name.
    if isinstance(exc, OSError) and exc.strerror:
        detail = exc.strerror
    else:
        detail = str(exc) or type(exc).__name__
    if sent:
        return ConnectionFailed(
            f"{what}: connection lost before the broker answered ({detail}); "
            "the request may or may not have been applied"
        )
    return ConnectionFailed(f"{what}: cannot connect to the broker ({detail})")
