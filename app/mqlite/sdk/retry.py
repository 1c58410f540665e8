"""When a remote call may be sent again, and how long to wait first (sync and aio share it).

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
code ``unavailable``) and a 503 as the broker's own error.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from mqlite import errors


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

    def backoff_s(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (0-based)."""
        bound = min(self.max_backoff_ms, self.base_ms * (2**retry))
        return random.uniform(0, bound) / 1000.0

    def retry_after_s(self, exc: errors.MQLiteError) -> float:
        """Seconds to wait after a 429: the broker's ``Retry-After``, capped."""
        after = getattr(exc, "retry_after_s", 1)
        return min(after * 1000, self.max_retry_after_ms) / 1000.0


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
