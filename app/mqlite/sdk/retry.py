"""When a remote call may be sent again, and how long to wait first (sync and aio share it).

The rule: a request is repeated only if repeating it cannot change the outcome.

- A connection that could not be opened sent nothing: every call may retry that.
- Once bytes may have reached the broker, only ``Call.safe`` calls retry (see
  ``mqlite.sdk.calls``): a lost Send answer is never resent blindly, because the first one
  may have committed and the client cannot know whether the queue deduplicates.
- A 503 (``outcome_unknown`` from a remote store, or a proxy's "service unavailable") is
  retried for safe calls only; other statuses are answers, never retried.

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

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.base_ms < 0 or self.max_backoff_ms < 0:
            raise errors.InvalidArgument("retry attempts must be >= 1 and backoffs >= 0")

    def backoff_s(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (0-based)."""
        bound = min(self.max_backoff_ms, self.base_ms * (2**retry))
        return random.uniform(0, bound) / 1000.0


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
