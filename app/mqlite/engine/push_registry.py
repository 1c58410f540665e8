"""The push targets in memory (engine/push.py writes them): published after the COMMIT
that wrote them and replaced whole, so Receive's check and the delivery loop's tick read
them with no SQL and no lock. The delivery state beside them (last status and error,
counters, next attempt) is this process's: it changes on every POST, and persisting it
would put a transaction on every delivery.
"""

from __future__ import annotations

import base64
import sqlite3
import threading
from dataclasses import dataclass, replace

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


@dataclass(slots=True)
class _Live:
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
        self, queue: str, *, ok: bool, status: int, error: str, at_ms: int, next_ms: int = 0
    ) -> None:
        """One attempt's outcome (the delivery loop, after it settled the message)."""
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

    def view(self, stored: StoredPush) -> PushTarget:
        with self._lock:
            live = replace(self._live.get(stored.queue) or _Live())
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
