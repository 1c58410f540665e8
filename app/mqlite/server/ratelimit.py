"""Per-key rate limits (issue 35): a token bucket per managed key, in this worker's memory.

One runaway producer must not fill the disk or starve the writer for every other tenant
of a shared broker. Each managed key has ``rate_limit_per_s`` tokens a second and holds at
most ``burst``; a Send costs its number of messages, every other RPC one. A request the
bucket cannot pay is refused BEFORE its handler runs (``429 resource_exhausted`` with
``Retry-After``), so nothing was done and any client may retry it, even a Send.

The bucket lives in memory per worker (no database write per request; a restart refills
it). Keys that set no limit use the broker default (``MQLITE_KEY_RATE_LIMIT``, 0 =
unlimited); configured administrator and monitor tokens are never limited. The refusal
counts are per key id (never a token), bounded by the number of keys.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from mqlite import errors

# A Retry-After above this says "much later"; clients cap their own wait anyway.
MAX_RETRY_AFTER_S = 3600


class RateLimiter:
    __slots__ = ("_buckets", "_now", "default_burst", "default_rate", "refused")

    def __init__(
        self, default_rate: int = 0, default_burst: int = 0, now: Callable[[], float] | None = None
    ) -> None:
        self.default_rate = default_rate
        self.default_burst = default_burst or default_rate
        self._now = now or time.monotonic
        self._buckets: dict[str, list[float]] = {}  # key id -> [tokens, last refill]
        self.refused: dict[str, int] = {}  # key id -> requests refused (the metric)

    def limits(self, rate: int, burst: int) -> tuple[int, int]:
        """The (rate, burst) a key with these settings gets (its own, else the default)."""
        if rate <= 0:
            return self.default_rate, self.default_burst
        return rate, burst or rate

    def take(self, key_id: str, rate: int, burst: int, cost: int) -> None:
        """Pay ``cost`` tokens from ``key_id``'s bucket or raise ``ResourceExhausted``.

        A cost above the burst passes on a full bucket and leaves it in debt (a batch
        larger than the burst is slowed, never refused for ever)."""
        rate, burst = self.limits(rate, burst)
        if rate <= 0:
            return
        now = self._now()
        bucket = self._buckets.get(key_id)
        if bucket is None:
            bucket = self._buckets[key_id] = [float(burst), now]
        tokens = min(float(burst), bucket[0] + (now - bucket[1]) * rate)
        bucket[1] = now
        need = min(cost, burst)
        if tokens >= need:
            bucket[0] = tokens - cost
            return
        bucket[0] = tokens
        self.refused[key_id] = self.refused.get(key_id, 0) + 1
        wait = min(max(math.ceil((need - tokens) / rate), 1), MAX_RETRY_AFTER_S)
        raise errors.ResourceExhausted(
            f"rate limit of this key ({rate}/s, burst {burst}) exceeded: retry after {wait} s",
            retry_after_s=wait,
        )

    def metrics_text(self) -> str:
        """``mqlite_rate_limited_total{key_id}`` in text format 0.0.4 ("" before any)."""
        if not self.refused:
            return ""
        name = "mqlite_rate_limited_total"
        out = [
            f"# HELP {name} Requests refused by a key's rate limit (429), by key id.\n",
            f"# TYPE {name} counter\n",
        ]
        out.extend(f'{name}{{key_id="{k}"}} {n}\n' for k, n in sorted(self.refused.items()))
        return "".join(out)
