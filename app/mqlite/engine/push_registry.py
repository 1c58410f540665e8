"""The push targets in memory (engine/push.py writes them): published after the COMMIT
that wrote them and replaced whole, so Receive's check and the delivery loop's tick read
them with no SQL and no lock. The delivery state beside them (last status and error,
counters, next attempt) is this process's: it changes on every POST, and persisting it
would put a transaction on every delivery.
"""

from __future__ import annotations

import base64
import bisect
import sqlite3
import threading
from dataclasses import dataclass, field, replace

from mqlite.engine import egress
from mqlite.types import PushTarget

SECRET_PREFIX = "whsec_"

LOAD_SQL = (
    "SELECT queue, url, secret, max_in_flight, timeout_ms, paused, created_at, updated_at "
    "FROM push_targets"
)


@dataclass(frozen=True, slots=True)
class StoredPush:
    """A target as stored, secret included (the delivery loop's view; never on the wire)."""

    queue: str
    url: str
    secret: str
    max_in_flight: int
    timeout_ms: int
    paused: bool
    created_at_ms: int
    updated_at_ms: int

    def key(self) -> bytes:
        """The HMAC key: the base64-decoded bytes after ``whsec_``."""
        return base64.b64decode(self.secret[len(SECRET_PREFIX) :])


# mqlite_push_deliveries_total's outcome vocabulary (attempt.py names them).
PUSH_OUTCOMES = ("delivered", "retry", "rejected")
# mqlite_push_duration_seconds's upper bounds (a POST: milliseconds to the 60 s ceiling).
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


@dataclass(slots=True)
class _Histogram:
    counts: list[int] = field(default_factory=lambda: [0] * (len(DURATION_BUCKETS) + 1))
    total: float = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(DURATION_BUCKETS, seconds)] += 1
        self.total += seconds


@dataclass(frozen=True, slots=True)
class PushMeasure:
    """One target's measures: attempts per outcome (delivered, retry, rejected), the
    count per duration bucket (the last is +Inf) and the summed seconds."""

    queue: str
    outcomes: dict[str, int]
    buckets: list[int]
    seconds: float


@dataclass(slots=True)
class _Live:
    outcomes: dict[str, int] = field(default_factory=dict)
    duration: _Histogram = field(default_factory=_Histogram)
    last_status: int = 0
    last_error: str = ""
    last_attempt_at_ms: int = 0
    next_attempt_at_ms: int = 0
    delivered: int = 0
    failed: int = 0
    failing: bool = False


class PushRegistry:
    """The published targets (replaced whole, so readers need no lock) and their state."""

    def __init__(self, guard: egress.Egress) -> None:
        self.egress = guard
        self.targets: dict[str, StoredPush] = {}
        self._live: dict[str, _Live] = {}
        self._lock = threading.Lock()

    def load(self, conn: sqlite3.Connection) -> None:
        self.targets = {row[0]: _stored(row) for row in conn.execute(LOAD_SQL)}

    def publish(self, queue: str, target: StoredPush | None) -> None:
        targets = dict(self.targets)
        if target is None:
            targets.pop(queue, None)
            with self._lock:
                self._live.pop(queue, None)
        else:
            targets[queue] = target
        self.targets = targets

    def record(
        self,
        queue: str,
        *,
        outcome: str,
        status: int,
        error: str,
        seconds: float,
        at_ms: int,
        next_ms: int = 0,
    ) -> None:
        """One attempt's outcome (the delivery loop, after it settled the message)."""
        ok = outcome == "delivered"
        with self._lock:
            live = self._live.setdefault(queue, _Live())
            live.last_status, live.last_attempt_at_ms = status, at_ms
            live.failing = not ok
            live.next_attempt_at_ms = 0 if ok else next_ms
            if ok:
                live.delivered += 1
                live.last_error = ""
            else:
                live.failed += 1
                live.last_error = error
            live.outcomes[outcome] = live.outcomes.get(outcome, 0) + 1
            live.duration.observe(seconds)

    def measures(self) -> list[PushMeasure]:
        """Per target: attempts by outcome and the POST duration histogram (Observe,
        /metrics); counters since the broker started."""
        with self._lock:
            return [
                PushMeasure(
                    q, dict(live.outcomes), live.duration.counts.copy(), live.duration.total
                )
                for q, live in sorted(self._live.items())
            ]

    def view(self, stored: StoredPush) -> PushTarget:
        with self._lock:
            live = replace(self._live.get(stored.queue) or _Live(), outcomes={})
        status = "paused" if stored.paused else ("failing" if live.failing else "active")
        return PushTarget(
            stored.queue, stored.url, stored.max_in_flight, stored.timeout_ms, stored.paused,
            status, live.last_status, live.last_error, live.last_attempt_at_ms,
            live.next_attempt_at_ms, live.delivered, live.failed, stored.created_at_ms,
            stored.updated_at_ms,
        )  # fmt: skip


def _stored(row: tuple[object, ...]) -> StoredPush:
    queue, url, secret, in_flight, timeout, paused, created, updated = row
    return StoredPush(
        str(queue), str(url), str(secret), int(in_flight), int(timeout), bool(paused),  # type: ignore[call-overload]
        int(created), int(updated),  # type: ignore[call-overload]
    )  # fmt: skip
